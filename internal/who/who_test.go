package who_test

import (
	"os/user"
	"testing"

	"github.com/pi-otel/pi-otel/internal/who"
)

func TestPseudonym(t *testing.T) {
	a := who.Pseudonym("k", "alice", "box")
	if a != who.Pseudonym("k", "alice", "box") {
		t.Error("not stable")
	}
	if len(a) != 32 {
		t.Errorf("pseudonym %q, want 32 hex digits", a)
	}
	// Key, login and host each change it, and the separator keeps
	// ("ab","c") apart from ("a","bc").
	for _, other := range []string{who.Pseudonym("k2", "alice", "box"), who.Pseudonym("k", "bob", "box"),
		who.Pseudonym("k", "alice", "box2"), who.Pseudonym("k", "alicebo", "x")} {
		if other == a {
			t.Errorf("pseudonym %s repeats", a)
		}
	}
}

func TestPseudoAttribute(t *testing.T) {
	if got := who.PseudoAttribute("", ""); got != nil {
		t.Errorf("off by default, got %v", got)
	}
	if got := who.PseudoAttribute("alice", "k"); got != nil {
		t.Errorf("a named user needs no pseudonym, got %v", got)
	}
	if _, err := user.Current(); err != nil {
		t.Fatalf("no current user to derive a pseudonym from: %v", err)
	}
	got := who.PseudoAttribute("", "k")
	if len(got) != 1 || got[0].Key != "enduser.pseudo.id" || got[0].Value.AsString() != who.LocalPseudonym("k") {
		t.Errorf("PseudoAttribute = %v", got)
	}
	u, _ := user.Current()
	if got[0].Value.AsString() == u.Username {
		t.Error("the pseudonym is the login")
	}
}
