package framing

import (
	"io"

	"github.com/pi-otel/pi-otel/internal/option"
)

// ChunkReader lets the external tests read data in reads of the given
// sizes, as [chunkReader] does; Len says how much is left unread.
func ChunkReader(data []byte, sizes ...int) interface {
	io.Reader
	Len() int
} {
	return &chunkReader{data: data, sizes: sizes}
}

// WithReadSize sets how many bytes [Reader] and [Forward] ask for in one
// read (default 64 KiB). Values below 1 are ignored.
func WithReadSize(n int) Option {
	return option.Func[config](func(c *config) {
		if n >= 1 {
			c.readSize = n
		}
	})
}

// WithRetain sets the largest buffer kept for reuse once a record is done
// (default 4 MiB). A buffer that grew beyond it for one huge record is
// released afterwards, so memory returns to a steady level; records up to
// this size cost no allocation once the buffer has grown. It is also the
// size of the pieces a longer record is read into before it is copied, once,
// into a buffer of its own: such a record costs about twice its size.
// Negative values are ignored.
func WithRetain(n int) Option {
	return option.Func[config](func(c *config) {
		if n >= 0 {
			c.retain = n
		}
	})
}

// Stats reports what the Reader has seen so far.
func (r *Reader) Stats() Stats { return r.stats }
