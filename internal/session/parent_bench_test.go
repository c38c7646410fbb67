package session

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pi-otel/pi-otel/internal/session/sessiongen"
)

// BenchmarkParentLink finds the tool span that ran a child session in a
// 16 MB parent file whose last run ran it: what replaying the child alone
// costs for its link.
func BenchmarkParentLink(b *testing.B) {
	dir := b.TempDir()
	parentPath := filepath.Join(dir, "2026-12-01T10-00-00-000Z_s1.jsonl")
	child, parent := childAndParent(b, parentPath)
	var buf bytes.Buffer
	if _, err := sessiongen.Write(&buf, sessiongen.Config{Size: 16e6, Seed: 1, ID: "s1"}); err != nil {
		b.Fatal(err)
	}
	tail := parent(`[{"agent":"scout","sessionFile":"` + child + `"}]`)
	tail = tail[bytes.IndexByte(tail, '\n')+1:] // without its header
	buf.Write(tail)
	if err := os.WriteFile(parentPath, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		if _, ok := findParent(parentPath, "child-1"); !ok {
			b.Fatal("no parent tool found")
		}
	}
}

func findParent(parentSession, childID string) (any, bool) {
	return NewParentTools(1<<30).Find(parentSession, childID)
}
