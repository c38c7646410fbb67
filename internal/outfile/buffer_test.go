package outfile

import (
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once (run with -race), and WriteTo hands on
// what is held and empties the buffer.
func TestBufferConcurrentAndWriteTo(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := len(b.Bytes()); got != 400 {
		t.Fatalf("%d bytes held, want 400", got)
	}
	var out strings.Builder
	if n, err := b.WriteTo(&out); n != 400 || err != nil || out.Len() != 400 {
		t.Fatalf("WriteTo: %d, %v; %d bytes out", n, err, out.Len())
	}
	if b.String() != "" {
		t.Errorf("still held after WriteTo: %q", b.String())
	}
}
