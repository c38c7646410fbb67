package framing

import "github.com/pi-otel/pi-otel/internal/option"

const (
	defaultReadSize = 64 << 10
	defaultRetain   = 4 << 20
	// minPiece is the least of the largest buffer a long record is kept
	// in, so that a tiny retain does not make a list of tiny pieces.
	minPiece = 64 << 10
	// firstPiece is the first buffer of a record that spans Splitter
	// writes; the next ones double.
	firstPiece = 4 << 10
)

type config struct {
	readSize  int
	retain    int
	maxRecord int
}

// piece is the size of the largest buffers a long record is kept in, while
// its LF has not arrived.
func (c config) piece() int { return max(c.retain, c.readSize, minPiece) }

func newConfig(opts []Option) config {
	return option.Apply(config{readSize: defaultReadSize, retain: defaultRetain}, opts)
}

// Option configures a [Splitter], a [Reader] or [Forward].
type Option = option.Option[config]

// WithMaxRecord bounds the length of a record a [Reader] hands out
// (default: no bound). A longer line is not kept: as soon as more than n
// bytes of it are held, Next drops them and returns a [*TooLongError],
// then skips the rest of the line up to its LF without holding it. Input
// without line ends (/dev/zero) then costs about n bytes, not all of
// memory. Values below 1 mean no bound.
func WithMaxRecord(n int) Option {
	return option.Func[config](func(c *config) {
		c.maxRecord = max(n, 0)
	})
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
// into a buffer of its own: such a record costs about twice its size (a
// tail's, once: see [NewReaderAt]).
// Negative values are ignored.
func WithRetain(n int) Option {
	return option.Func[config](func(c *config) {
		if n >= 0 {
			c.retain = n
		}
	})
}
