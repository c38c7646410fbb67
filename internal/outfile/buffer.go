package outfile

import (
	"bytes"
	"io"
	"sync"
)

// Buffer is a bytes.Buffer that one goroutine may write while another
// reads it: output held back (pi-otel's stderr lines while Pi owns the
// terminal) or collected (a child process's stderr in a test).
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes returns a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// WriteTo writes what is held to w and empties the buffer.
func (b *Buffer) WriteTo(w io.Writer) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.WriteTo(w)
}
