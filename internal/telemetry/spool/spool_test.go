package spool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func request(spans int, name string) *coltracepb.ExportTraceServiceRequest {
	ss := &tracepb.ScopeSpans{}
	for i := 0; i < spans; i++ {
		ss.Spans = append(ss.Spans, &tracepb.Span{Name: name})
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{ss}}}}
}

func open(t *testing.T, cfg Config) *Spool {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(t.TempDir(), "state", "spool")
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// collect is an upload that records span names, or fails with err.
type collect struct {
	names []string
	err   error
}

func (c *collect) upload(_ context.Context, req *coltracepb.ExportTraceServiceRequest) error {
	if c.err != nil {
		return c.err
	}
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.names = append(c.names, s.Name)
			}
		}
	}
	return nil
}

func TestPutThenDrainInOrderAcrossProcesses(t *testing.T) {
	first := open(t, Config{})
	for _, name := range []string{"a", "b", "c"} {
		if err := first.Put(request(2, name)); err != nil {
			t.Fatal(err)
		}
	}
	if got := first.Stats().Spooled; got != 6 {
		t.Errorf("spooled %d", got)
	}
	// The collector is still away: nothing is lost, nothing is sent.
	next := open(t, Config{Dir: first.Dir()})
	down := &collect{err: errors.New("unavailable")}
	if err := next.Drain(context.Background(), down.upload); err == nil {
		t.Error("a failed upload did not stop the drain")
	}
	// It is back: everything arrives once, oldest first.
	up := &collect{}
	if err := next.Drain(context.Background(), up.upload); err != nil {
		t.Fatal(err)
	}
	if got := len(up.names); got != 6 || up.names[0] != "a" || up.names[5] != "c" {
		t.Errorf("delivered %v", up.names)
	}
	if st := next.Stats(); st.Late != 6 || st.Resent != 0 {
		t.Errorf("stats %+v, want 6 late", st)
	}
	again := &collect{}
	next.Drain(context.Background(), again.upload)
	if len(again.names) != 0 {
		t.Errorf("sent twice: %v", again.names)
	}
}

// TestOwnFilesAreResentNotLate: a process (watch) that sends what it
// spooled itself counts it apart from what earlier processes left, so
// its summary does not say its spans wait for another pi-otel.
func TestOwnFilesAreResentNotLate(t *testing.T) {
	earlier := open(t, Config{})
	if err := earlier.Put(request(2, "earlier")); err != nil {
		t.Fatal(err)
	}
	s := open(t, Config{Dir: earlier.Dir()})
	for _, name := range []string{"own1", "own2"} {
		if err := s.Put(request(3, name)); err != nil {
			t.Fatal(err)
		}
	}
	up := &collect{}
	if err := s.Drain(context.Background(), up.upload); err != nil {
		t.Fatal(err)
	}
	if len(up.names) != 8 {
		t.Errorf("delivered %v, want 8 spans", up.names)
	}
	if st := s.Stats(); st.Spooled != 6 || st.Resent != 6 || st.Late != 2 {
		t.Errorf("stats %+v, want 6 spooled, 6 resent, 2 late", st)
	}
	if n := len(s.mine); n != 0 {
		t.Errorf("%d sent files still marked as waiting", n)
	}
}

func TestPrivateDirectoryAndFiles(t *testing.T) {
	s := open(t, Config{})
	s.Put(request(1, "x"))
	fi, _ := os.Stat(s.Dir())
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(s.Dir())
	for _, e := range ents {
		info, _ := e.Info()
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", e.Name(), info.Mode().Perm())
		}
	}
	other := filepath.Join(t.TempDir(), "theirs")
	os.Mkdir(other, 0o700)
	if err := os.Chown(other, 4242, 4242); err != nil {
		if os.Getuid() == 0 {
			t.Fatalf("root could not chown: %v", err) // the test must not go quiet where it can run
		}
		t.Skipf("cannot give a directory to another user here: %v", err)
	}
	if _, err := Open(Config{Dir: other}); err == nil {
		t.Error("opened a spool in another user's directory")
	}
}

// names lists the spool's files, claimed or not.
func names(t *testing.T, s *Spool) []string {
	t.Helper()
	ents, err := os.ReadDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// A spool at its size bound refuses the next request, and deletes nothing
// to make room: spooled spans count as delivered, so deleting them would
// lose them for good. Once it is sent, it takes requests again.
func TestFullSpoolRefusesAndKeepsWhatItHolds(t *testing.T) {
	first := open(t, Config{})
	first.Put(request(3, "old"))
	held := names(t, first)
	info, _ := os.Stat(filepath.Join(first.Dir(), held[0]))
	// Room for one file and a half.
	s := open(t, Config{Dir: first.Dir(), MaxBytes: info.Size() * 3 / 2})
	err := s.Put(request(3, "new"))
	if !errors.Is(err, ErrFull) {
		t.Fatalf("Put into a full spool: %v, want ErrFull", err)
	}
	if got := names(t, s); len(got) != 1 || got[0] != held[0] {
		t.Errorf("spool holds %v, want what it held: %v", got, held)
	}
	if st := s.Stats(); st.Full != 3 || st.Spooled != 0 || st.Expired != 0 {
		t.Errorf("stats %+v, want 3 full, nothing spooled or expired", st)
	}
	// A file being sent still takes its room: the send may fail.
	claimed := filepath.Join(s.Dir(), ".sending-99999-"+held[0])
	os.Rename(filepath.Join(s.Dir(), held[0]), claimed)
	if err := s.Put(request(3, "new")); !errors.Is(err, ErrFull) {
		t.Errorf("Put beside a file being sent: %v, want ErrFull", err)
	}
	os.Rename(claimed, filepath.Join(s.Dir(), held[0]))
	// Sent, the spool has room again.
	up := &collect{}
	if err := s.Drain(context.Background(), up.upload); err != nil {
		t.Fatal(err)
	}
	if len(up.names) != 3 || up.names[0] != "old" {
		t.Errorf("delivered %v, want the old file's 3 spans", up.names)
	}
	if err := s.Put(request(3, "new")); err != nil {
		t.Fatalf("Put into a drained spool: %v", err)
	}
	// A bound lowered below what is held deletes nothing either.
	lower := open(t, Config{Dir: s.Dir(), MaxBytes: 1})
	if err := lower.Put(request(1, "newer")); !errors.Is(err, ErrFull) {
		t.Errorf("Put over a lowered bound: %v", err)
	}
	up = &collect{}
	lower.Drain(context.Background(), up.upload)
	if len(up.names) != 3 || up.names[0] != "new" {
		t.Errorf("delivered %v, want the 3 spans held", up.names)
	}
}

// A request spooled longer ago than the age bound is not sent: it is
// dropped when found, counted, and told, by Drain and by Put alike (Put
// first makes room of it).
// A sender claims a file, and gives it back when the send fails, by
// renaming it. One renamed while Put counts the spool still takes its
// room (else a full spool takes more while it is sent): the listing is
// read again.
func TestFullSpoolCountsAFileRenamedWhileListed(t *testing.T) {
	first := open(t, Config{})
	if err := first.Put(request(50, "old")); err != nil {
		t.Fatal(err)
	}
	held := names(t, first)
	info, err := os.Stat(filepath.Join(first.Dir(), held[0]))
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(first.Dir(), held[0])
	claimed := filepath.Join(first.Dir(), ".sending-99999-"+held[0])
	for _, c := range []struct{ name, from, to string }{{"claimed", at, claimed}, {"given back", claimed, at}} {
		if c.name == "given back" {
			os.Rename(at, claimed)
		}
		s := open(t, Config{Dir: first.Dir()})
		renamed := false
		s.readDir = func() {
			if !renamed {
				renamed = true
				if err := os.Rename(c.from, c.to); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := s.used(); got != info.Size() {
			t.Errorf("spool uses %d bytes while its file is %s, want %d", got, c.name, info.Size())
		}
		if !renamed {
			t.Fatal("the spool was not listed")
		}
	}
}

func TestExpiredIsDroppedCountedAndTold(t *testing.T) {
	type told struct {
		spans int64
		age   time.Duration
	}
	var expired []told
	cfg := Config{MaxAge: time.Hour, Expired: func(n int64, age time.Duration) { expired = append(expired, told{n, age}) }}
	aged := open(t, cfg)
	aged.Put(request(4, "stale"))
	aged.Put(request(2, "fresh"))
	long := time.Now().Add(-2 * time.Hour)
	os.Chtimes(filepath.Join(aged.Dir(), names(t, aged)[0]), long, long)
	up := &collect{}
	if err := aged.Drain(context.Background(), up.upload); err != nil {
		t.Fatal(err)
	}
	if len(up.names) != 2 || up.names[0] != "fresh" {
		t.Errorf("delivered %v, want the fresh spans only", up.names)
	}
	if st := aged.Stats(); st.Expired != 4 || st.Resent != 2 || st.Late != 0 {
		t.Errorf("stats %+v, want 4 expired, 2 resent", st)
	}
	if len(expired) != 1 || expired[0].spans != 4 || expired[0].age < 2*time.Hour {
		t.Errorf("told %+v, want 4 spans, 2h old", expired)
	}

	// Put: a full spool of expired requests takes the new one in their place.
	aged.Put(request(5, "stale"))
	info, _ := os.Stat(filepath.Join(aged.Dir(), names(t, aged)[0]))
	os.Chtimes(filepath.Join(aged.Dir(), names(t, aged)[0]), long, long)
	cfg.Dir, cfg.MaxBytes = aged.Dir(), info.Size()+1
	bounded := open(t, cfg)
	if err := bounded.Put(request(5, "new")); err != nil {
		t.Fatalf("Put in place of an expired request: %v", err)
	}
	if st := bounded.Stats(); st.Expired != 5 || st.Spooled != 5 {
		t.Errorf("stats %+v, want 5 expired, 5 spooled", st)
	}
}

// A process that died while sending leaves its claim; after a while the
// file is sent by another.
func TestAbandonedClaimIsReleased(t *testing.T) {
	s := open(t, Config{})
	s.Put(request(1, "orphan"))
	ents, _ := os.ReadDir(s.Dir())
	name := ents[0].Name()
	claimed := filepath.Join(s.Dir(), ".sending-99999-"+name)
	os.Rename(filepath.Join(s.Dir(), name), claimed)
	up := &collect{}
	s.Drain(context.Background(), up.upload)
	if len(up.names) != 0 {
		t.Fatal("sent a file another process is sending")
	}
	long := time.Now().Add(-time.Hour)
	os.Chtimes(claimed, long, long)
	s.Drain(context.Background(), up.upload)
	if len(up.names) != 1 {
		t.Errorf("abandoned claim not released: %v", up.names)
	}
}

// A damaged spool file does not stop the drain; it is counted, named once
// and kept aside as NAME.corrupt with its bytes, never deleted.
func TestDamagedFileIsCountedNamedAndKept(t *testing.T) {
	var named []string
	s := open(t, Config{Corrupt: func(path string, err error) {
		if err == nil {
			t.Error("no reason given")
		}
		named = append(named, path)
	}})
	if err := s.Put(request(2, "before")); err != nil {
		t.Fatal(err)
	}
	damaged := []byte("\xff\xff\xff\xff not protobuf")
	name := fmt.Sprintf("%020d-1-1%s", time.Now().UnixNano(), suffix)
	if err := os.WriteFile(filepath.Join(s.Dir(), name), damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(request(3, "after")); err != nil {
		t.Fatal(err)
	}
	c := &collect{}
	for range 2 { // the second drain finds it set aside, and says nothing
		if err := s.Drain(context.Background(), c.upload); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.names) != 5 {
		t.Errorf("delivered %v, want the 5 spans around the damaged file", c.names)
	}
	aside := filepath.Join(s.Dir(), name+".corrupt")
	if len(named) != 1 || named[0] != aside {
		t.Errorf("named %v, want once %s", named, aside)
	}
	if b, err := os.ReadFile(aside); err != nil || string(b) != string(damaged) {
		t.Errorf("kept file: %q, %v", b, err)
	}
	if st := s.Stats(); st.Corrupt != 1 || st.Expired != 0 || st.Resent != 5 || st.Late != 0 {
		t.Errorf("stats %+v, want 1 corrupt, 0 expired, 5 resent", st)
	}
	// The age bound does not delete it either: expire sets damaged files
	// aside the same way.
	other := fmt.Sprintf("%020d-1-2%s", time.Now().Add(-time.Hour).UnixNano(), suffix)
	old := open(t, Config{Dir: s.Dir(), MaxAge: time.Hour})
	if err := os.WriteFile(filepath.Join(s.Dir(), other), damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-2 * time.Hour) // aged by its mtime, not by waiting
	if err := os.Chtimes(filepath.Join(s.Dir(), other), long, long); err != nil {
		t.Fatal(err)
	}
	old.expire()
	if _, err := os.Stat(filepath.Join(s.Dir(), other+".corrupt")); err != nil || old.Stats().Corrupt != 1 {
		t.Errorf("trim: %v, stats %+v", err, old.Stats())
	}
}
