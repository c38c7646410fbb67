package ledger

import (
	"testing"
	"time"
)

// A run is claimed once, by either key; claims given back are claimed
// again but not counted again, and only committed claims are saved.
func TestClaimCommitFail(t *testing.T) {
	l := New()
	at := time.UnixMilli(1_700_000_000_000)
	if trace, count := l.Claim("s", "s/a", at); !trace || !count {
		t.Fatalf("first claim: trace %v count %v", trace, count)
	}
	if trace, _ := l.Claim("s", "s/a", at); trace {
		t.Error("a run claimed twice by its key")
	}
	// Pi gave the entries new ids (a migrated file): the time still holds.
	if trace, _ := l.Claim("s", "s/b", at); trace {
		t.Error("a run claimed twice by its start")
	}
	if !l.Pending() || len(l.Save()) != 1 || l.Save()[0].Runs != "" {
		t.Errorf("a pending claim was saved: %+v", l.Save())
	}
	l.Fail()
	trace, count := l.Claim("s", "s/a", at)
	if !trace || count {
		t.Errorf("claim after a failed export: trace %v count %v, want true false", trace, count)
	}
	l.Commit()
	if l.Pending() || len(l.Save()) != 1 || l.Save()[0].Runs == "" {
		t.Fatalf("committed, saved %+v", l.Save())
	}
	r := New()
	if err := r.Load(l.Save()); err != nil {
		t.Fatal(err)
	}
	if trace, _ := r.Claim("s", "s/a", at); trace {
		t.Error("a run claimed again after a restart")
	}
	if trace, count := r.Claim("s", "s/c", at.Add(time.Second)); !trace || !count {
		t.Errorf("a new run after a restart: trace %v count %v", trace, count)
	}
}

// Runs begun before a session's history bound are never traced; Traced
// records a run an older pi-otel traced.
func TestHistoryAndTraced(t *testing.T) {
	l := New()
	since := time.UnixMilli(1_700_000_000_000)
	l.History("s", since)
	if trace, _ := l.Claim("s", "s/old", since.Add(-time.Second)); trace {
		t.Error("history traced")
	}
	l.Traced("s", "s/done", since.Add(time.Second))
	if trace, _ := l.Claim("s", "s/done", since.Add(time.Second)); trace {
		t.Error("a run an older pi-otel traced was traced again")
	}
	if trace, _ := l.Claim("s", "s/new", since.Add(2*time.Second)); !trace {
		t.Error("a new run was not traced")
	}
	if err := New().Load([]Session{{ID: "s", Runs: "AAA"}}); err != ErrDamaged {
		t.Errorf("damaged runs: %v", err)
	}
}
