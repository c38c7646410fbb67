// Package wait lets a test wait for something to happen, with a deadline,
// instead of sleeping for a time and hoping it happened. The deadline
// guards against a hang; it asserts nothing about how long the wait took.
package wait

import (
	"testing"
	"time"
)

// maxPoll bounds the pause between two looks at the condition: the pause
// starts at a millisecond and doubles, so a quick condition is seen at
// once and a slow one costs few looks.
const maxPoll = 100 * time.Millisecond

// Until reports whether cond held before within passed, looking at it
// again and again.
func Until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	poll := time.Millisecond
	for !cond() {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		t := time.NewTimer(min(poll, left))
		<-t.C
		poll = min(2*poll, maxPoll)
	}
	return true
}

// For waits until cond holds; if it does not within the deadline, it
// fails the test with what msg says.
func For(t testing.TB, within time.Duration, cond func() bool, msg func() string) {
	t.Helper()
	if !Until(within, cond) {
		t.Fatalf("not so within %s: %s", within, msg())
	}
}
