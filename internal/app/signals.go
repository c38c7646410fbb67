package app

import (
	"context"
	"os"
	"sync"
)

// Signals fans the process's stop signals (SIGINT, SIGTERM, SIGHUP) out to
// whoever listens at the time. main makes the one signal.Notify call and
// hands its channel to RelaySignals; commands subscribe, so no code below
// main sets a process-wide handler, and an in-process test passes none.
type Signals struct {
	mu   sync.Mutex
	subs map[chan os.Signal]struct{}
}

// RelaySignals passes every signal from c to the subscribers of the
// Signals it returns, until c is closed. A signal that comes while nobody
// listens is dropped: a command that waits for none (run, while Pi runs)
// leaves it to Pi.
func RelaySignals(c <-chan os.Signal) *Signals {
	s := &Signals{subs: map[chan os.Signal]struct{}{}}
	go func() {
		for sig := range c {
			s.mu.Lock()
			for sub := range s.subs {
				select {
				case sub <- sig:
				default: // it has one to act on already
				}
			}
			s.mu.Unlock()
		}
	}()
	return s
}

// Subscribe returns a channel that receives the signals from now on, and
// the func that ends the subscription. A nil Signals never sends one.
func (s *Signals) Subscribe() (<-chan os.Signal, func()) {
	if s == nil {
		return nil, func() {}
	}
	ch := make(chan os.Signal, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	}
}

// stopContext returns a context that ends with ctx or at the first signal,
// whichever comes first.
func (s *Signals) stopContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	sigs, unsubscribe := s.Subscribe()
	go func() {
		defer unsubscribe()
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
