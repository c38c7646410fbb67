package wait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	var n atomic.Int32
	if !Until(time.Minute, func() bool { return n.Add(1) == 5 }) {
		t.Fatal("a condition that came true was not seen")
	}
	if Until(10*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never held was seen")
	}
}
