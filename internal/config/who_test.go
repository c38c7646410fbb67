package config_test

import (
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
)

// TestUserAndTeam: --user and --team (or their variables) win over the
// resource attributes' enduser.id and pi.team, and land in both the
// fields and the resource; nothing is set when nothing is given.
func TestUserAndTeam(t *testing.T) {
	for _, tc := range []struct {
		name           string
		args           []string
		env            map[string]string
		user, team, pk string
	}{
		{name: "none"},
		{name: "attributes", env: map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "enduser.id=a,pi.team=red"}, user: "a", team: "red"},
		{name: "variables win", env: map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "enduser.id=a,pi.team=red",
			"PI_OTEL_USER": "b", "PI_OTEL_TEAM": "blue", "PI_OTEL_USER_PSEUDONYM_KEY": "k"}, user: "b", team: "blue", pk: "k"},
		{name: "flags win", args: []string{"--user", "c", "--team", "green"},
			env: map[string]string{"PI_OTEL_USER": "b", "PI_OTEL_TEAM": "blue"}, user: "c", team: "green"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustLoad(t, tc.args, tc.env)
			if cfg.User != tc.user || cfg.Team != tc.team || cfg.UserPseudonymKey != tc.pk {
				t.Errorf("user %q team %q key %q, want %q %q %q", cfg.User, cfg.Team, cfg.UserPseudonymKey, tc.user, tc.team, tc.pk)
			}
			for key, want := range map[attribute.Key]string{"enduser.id": tc.user, "pi.team": tc.team} {
				i := slices.IndexFunc(cfg.ResourceAttributes, func(kv attribute.KeyValue) bool { return kv.Key == key })
				switch {
				case want == "" && i >= 0:
					t.Errorf("resource has %v", cfg.ResourceAttributes[i])
				case want != "" && (i < 0 || cfg.ResourceAttributes[i].Value.AsString() != want):
					t.Errorf("resource %v lacks %s=%s", cfg.ResourceAttributes, key, want)
				}
			}
		})
	}
}
