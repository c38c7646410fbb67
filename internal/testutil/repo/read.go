package repo

import (
	"os"
	"testing"
)

// Read returns the content of a file of this repository (a
// slash-separated path relative to the root), failing tb if it cannot.
func Read(tb testing.TB, rel string) []byte {
	tb.Helper()
	b, err := os.ReadFile(Path(rel))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
