package sessionwatch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// referenceHeader is a first line as sessionwatch read it before
// event.ReadHeader, with encoding/json: its fields whatever the line is,
// and the error that made sessionOf give nothing.
func referenceHeader(first []byte) (typ, id, parent string, err error) {
	var h struct {
		Type          string `json:"type"`
		ID            string `json:"id"`
		ParentSession string `json:"parentSession"`
	}
	err = json.Unmarshal(first, &h)
	return h.Type, h.ID, h.ParentSession, err
}

func referenceSessionOf(first []byte) (string, bool) {
	typ, id, _, err := referenceHeader(first)
	switch {
	case err != nil:
		return "", false
	case typ != "session":
		return "", typ != ""
	}
	return id, false
}

func FuzzHeaderMatchesReference(f *testing.F) {
	for _, s := range []string{
		`{"type":"session","id":"s","parentSession":"/p/x_a.jsonl"}`, `{"type":"message","id":"e1","parentId":null}`,
		`{"type":"session","id":"s","parentSession":7}`, `{"type":"session","id":"s","timestamp":7}`,
		`{"type":"session","ID":"a","id":"b\u00e9","x":tru}`, `[1]`, `null`, `{"type":null,"id":"e"}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, first []byte) {
		id, entry := sessionOf(first)
		if wid, wentry := referenceSessionOf(first); id != wid || entry != wentry {
			t.Fatalf("sessionOf(%q) = %q, %v; want %q, %v", first, id, entry, wid, wentry)
		}
		p := filepath.Join(dir, "s.jsonl")
		if err := os.WriteFile(p, append(first, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		line, _ := firstLine(framing.NewReaderAt(mustOpen(t, p), 0)) // what readHeader reads of it
		h, complete := readHeader(p)
		if _, wid, wparent, _ := referenceHeader(line); !complete || h.ID != wid || h.ParentSession != wparent {
			t.Fatalf("readHeader of %q = %q, %q, %v; want %q, %q", first, h.ID, h.ParentSession, complete, wid, wparent)
		}
	})
}

func mustOpen(t *testing.T, p string) *os.File {
	fh, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	return fh
}
