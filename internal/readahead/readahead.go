// Package readahead runs the reading and decoding of lines on a goroutine
// of their own, ahead of the goroutine that maps them, with a bound on
// what is held between the two. Decoding is a third to a half of tracing
// a session file, so a history is read on two cores instead of one.
package readahead

// Bounds on what is held: lines go over in batches of up to batchLines
// lines or batchBytes bytes, one batch waiting while the next is read. A
// line of HugeLine bytes or more is not read past until it is mapped, so
// two such lines (an image, a tool's output) are never held at once.
const (
	batchLines = 512
	batchBytes = 1 << 20
	HugeLine   = 1 << 20
)

// Run calls produce on a new goroutine. produce calls emit with each
// line's remaining work (apply) and its size in bytes, in order; Run calls
// each apply, then done with its size, in the same order on the calling
// goroutine, and returns once produce has returned and every apply has
// run.
func Run(produce func(emit func(apply func(), size int)), done func(size int)) {
	Start(produce).Drain(done)
}

// Ahead is a Run begun: produce works on its goroutine until Drain takes
// what it made, so that the caller can do other work meanwhile (trace
// one file while the next is read).
type Ahead struct {
	batches chan *batch
}

type batch struct {
	apply []func()
	size  []int
	// mapped, when set, is closed once the batch is mapped: produce
	// waits for it after a huge line.
	mapped chan struct{}
}

// Start calls produce on a new goroutine, as Run does; Drain must follow.
func Start(produce func(emit func(apply func(), size int))) *Ahead {
	batches := make(chan *batch, 1)
	go func() {
		defer close(batches)
		b, bytes := &batch{}, 0
		produce(func(apply func(), size int) {
			b.apply = append(b.apply, apply)
			b.size = append(b.size, size)
			bytes += size
			if len(b.apply) < batchLines && bytes < batchBytes {
				return
			}
			var wait chan struct{}
			if size >= HugeLine {
				wait = make(chan struct{})
				b.mapped = wait
			}
			batches <- b
			b, bytes = &batch{}, 0
			if wait != nil {
				<-wait
			}
		})
		if len(b.apply) > 0 {
			batches <- b
		}
	}()
	return &Ahead{batches: batches}
}

// Drain is the rest of Run: it applies what produce emits, in order, on
// the calling goroutine, and returns once produce has returned.
func (a *Ahead) Drain(done func(size int)) {
	for b := range a.batches {
		for i, apply := range b.apply {
			apply()
			done(b.size[i])
		}
		if b.mapped != nil {
			close(b.mapped)
		}
	}
}
