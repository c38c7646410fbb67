//go:build realstack

package e2e

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
)

// addSkill puts a skill in Pi's user skills folder and returns its
// SKILL.md.
func addSkill(t *testing.T, pi *pitest.Env, name string) string {
	t.Helper()
	dir := filepath.Join(pi.AgentDir, "skills", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "SKILL.md")
	body := "---\nname: " + name + "\ndescription: Make release notes from a changelog. Use when asked for release notes.\n---\n\n# Release notes\n\nList the changes.\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// skillsOf is a root's pi.skills as Jaeger returns it.
func skillsOf(s *jaegertest.Span) []string {
	var out []string
	vs, _ := s.Attrs["pi.skills"].([]any)
	for _, v := range vs {
		if str, ok := v.(string); ok {
			out = append(out, str)
		}
	}
	return out
}

// TestWhoSpentWhat: the real Pi 1.6.0 under pi-otel run, in Jaeger. The
// model reads a skill's SKILL.md, or the prompt is /skill:name: the run
// lists the skill, the read's span names it, and the resource carries the
// machine, the team and Pi's version.
func TestWhoSpentWhat(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	t.Run("skill-read", func(t *testing.T) {
		t.Parallel()
		var skillPath string
		s := prepareJSON(t, "skill-read", "Write the release notes",
			fakemodel.Response{Func: func(fakemodel.Request) fakemodel.Response {
				return fakemodel.Tools(fakemodel.Call("call_skill", "read", map[string]any{"path": skillPath}))
			}},
			fakemodel.Text("Notes written.", 2))
		skillPath = addSkill(t, s.pi, "release-notes")
		service := "e2e-skill-read"
		since := time.Now().Add(-time.Second)
		r := runPiOtel(t, s.pi, call{
			args: append([]string{"run", "--team", "red", "--"}, s.piArgs()...),
			env:  append(otlpGRPC(j, service), "OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=e2e"),
		})
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		tr := one(t, stored(t, j, service, since, r))
		rt := root(t, tr)
		if got := skillsOf(rt); !slices.Equal(got, []string{"release-notes"}) {
			t.Errorf("root pi.skills %v", rt.Attrs["pi.skills"])
		}
		read := only(t, tr, "execute_tool read")
		if read.Str("pi.skill") != "release-notes" || read.Status.Code == "error" {
			t.Errorf("read span: pi.skill %q, status %+v", read.Str("pi.skill"), read.Status)
		}
		chats := tr.Named("chat fake-model")
		if len(chats) != 2 || chats[1].Str("pi.skill") != "release-notes" || chats[0].Has("pi.skill") {
			t.Errorf("chats: want the second, after the load, charged to the skill")
		}
		host, _ := os.Hostname()
		for k, want := range map[string]string{
			"host.name": host, "os.type": runtime.GOOS, "process.runtime.name": "go",
			"pi.version": "1.6.0", "pi.team": "red", "deployment.environment.name": "e2e",
		} {
			if got, _ := rt.Resource[k].(string); got != want {
				t.Errorf("resource %s = %q, want %q (all: %v)", k, got, want, rt.Resource)
			}
		}
		if rt.Str("pi.team") != "red" {
			t.Errorf("root pi.team %q", rt.Str("pi.team"))
		}
	})
	t.Run("skill-command", func(t *testing.T) {
		t.Parallel()
		s := prepareJSON(t, "skill-command", "/skill:release-notes for v2", fakemodel.Text("Notes for v2.", 2))
		addSkill(t, s.pi, "release-notes")
		r, traces := traced(t, j, s, "e2e-skill-command")
		tr := one(t, traces)
		if got := skillsOf(root(t, tr)); !slices.Equal(got, []string{"release-notes"}) {
			t.Errorf("root pi.skills %v\nstderr:\n%s", root(t, tr).Attrs["pi.skills"], r.stderr)
		}
		if c := only(t, tr, "chat fake-model"); c.Str("pi.skill") != "release-notes" {
			t.Errorf("chat pi.skill %q", c.Str("pi.skill"))
		}
	})
}

// TestTUISkillCommand: /skill:name typed in the real Pi 1.6.0 terminal UI
// is traced, from the session file, as a run that loaded the skill.
func TestTUISkillCommand(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	model := fakemodel.Start(t, fakemodel.WithScript(fakemodel.Text("Notes from the skill.", 2)))
	pi := pitest.New(t, model.URL(), pitest.WithSettings(map[string]any{"quietStartup": true}))
	addSkill(t, pi, "release-notes")
	service := "e2e-tui-skill"
	since := time.Now().Add(-time.Second)
	u := startTUI(t, pi, otlpGRPC(j, service), pi.Args()...)
	u.waitScreen("fake-model")
	u.prompt("/skill:release-notes for v3")
	u.waitScreen("Notes from the skill.")
	r := u.quit()
	tr := one(t, stored(t, j, service, since, r))
	if got := skillsOf(root(t, tr)); !slices.Equal(got, []string{"release-notes"}) {
		t.Errorf("root pi.skills %v", root(t, tr).Attrs["pi.skills"])
	}
}
