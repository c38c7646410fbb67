package readahead

import (
	"sync/atomic"
	"testing"
)

// Every item is applied once, in order, on the calling goroutine's side,
// followed by done with its size; and nothing is read past a huge line
// until that line is applied.
func TestRunOrderAndHugeLines(t *testing.T) {
	const n = 5000
	size := func(i int) int {
		switch {
		case i%1000 == 999:
			return HugeLine + i
		case i%7 == 0:
			return 40 << 10
		default:
			return 1 + i%300
		}
	}
	var applied atomic.Int64 // items applied so far
	var order []int
	var sizes []int
	Run(func(emit func(func(), int)) {
		for i := range n {
			if i > 0 && size(i-1) >= HugeLine && applied.Load() != int64(i) {
				t.Errorf("item %d read while the huge item %d was not yet applied (%d applied)", i, i-1, applied.Load())
			}
			emit(func() {
				order = append(order, i)
				applied.Add(1)
			}, size(i))
		}
	}, func(s int) { sizes = append(sizes, s) })
	if len(order) != n || len(sizes) != n {
		t.Fatalf("applied %d, done %d, want %d", len(order), len(sizes), n)
	}
	for i := range n {
		if order[i] != i || sizes[i] != size(i) {
			t.Fatalf("position %d: item %d of size %d, want item %d of size %d", i, order[i], sizes[i], i, size(i))
		}
	}
}

// A producer that emits nothing returns at once.
func TestRunEmpty(t *testing.T) {
	done := 0
	Run(func(func(func(), int)) {}, func(int) { done++ })
	if done != 0 {
		t.Errorf("done called %d times", done)
	}
}
