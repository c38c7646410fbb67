package sessionwatch

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/spanid"
)

// The children's links go through the state file as they were noted, the
// newest maxSavedChildren of them; a state without them (an older
// pi-otel's) loads, and one whose links do not decode is refused as damaged.
func TestChildrenKeptInTheState(t *testing.T) {
	var links []session.Link
	for i := range maxSavedChildren + 3 {
		k := "s1/" + strconv.Itoa(i)
		links = append(links, session.Link{Child: "child-" + strconv.Itoa(i),
			Tool: spanid.SpanContext(spanid.TraceID(k), k, spanid.Path{Kind: "tool", ID: "c1"})})
	}
	pt := session.NewParentTools(1 << 20)
	pt.Restore(links)
	var st State
	st.Children, _ = saveChildren(pt)
	if len(st.Children) != maxSavedChildren || st.Children[0].Session != "child-3" {
		t.Fatalf("saved %d links from %s, want the newest %d", len(st.Children), st.Children[0].Session, maxSavedChildren)
	}
	p := filepath.Join(t.TempDir(), "watch.json")
	if err := st.Save(p); err != nil {
		t.Fatal(err)
	}
	got, _, err := LoadState(p)
	if err != nil {
		t.Fatal(err)
	}
	back := session.NewParentTools(1 << 20)
	if err := restoreChildren(back, got.Children); err != nil {
		t.Fatal(err)
	}
	kept, _ := back.Links(len(links))
	if len(kept) != maxSavedChildren {
		t.Fatalf("%d links back, want %d", len(kept), maxSavedChildren)
	}
	for i, l := range kept {
		if want := links[3+i]; l.Child != want.Child || !l.Tool.Equal(want.Tool) {
			t.Fatalf("link %d came back as %v, want %v", i, l, want)
		}
	}

	// An older pi-otel's state: no children, nothing to restore.
	must(t, os.WriteFile(p, []byte(`{"version":3,"files":[]}`), 0o600))
	f := New(Config{Dirs: []string{t.TempDir()}, StatePath: p, ParentTools: session.NewParentTools(1 << 20)})
	if err := f.load(); err != nil {
		t.Fatalf("a state without children: %v", err)
	}
	for _, tool := range []string{"", "00-0123", "01-" + strings.Repeat("1", 32) + "-" + strings.Repeat("2", 16) + "-01",
		"00-" + strings.Repeat("z", 32) + "-" + strings.Repeat("2", 16) + "-01", "00-" + strings.Repeat("1", 34) + "-" + strings.Repeat("2", 16) + "-01"} {
		must(t, os.WriteFile(p, []byte(`{"version":3,"files":[],"children":[{"session":"c","tool":"`+tool+`"}]}`), 0o600))
		f := New(Config{Dirs: []string{t.TempDir()}, StatePath: p, ParentTools: session.NewParentTools(1 << 20)})
		if err := f.load(); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("tool %q: load gave %v, want a damaged state", tool, err)
		}
	}
}
