package event

import (
	"strconv"
	"testing"
)

// Results reads a result as a repeat while its call has one and no model
// call asked for the id again, however many calls the run holds (past
// the list, in the set).
func TestResults(t *testing.T) {
	for _, n := range []int{1, resultsListMax, 3 * resultsListMax} {
		var r Results
		id := func(i int) string { return "call_" + strconv.Itoa(i) }
		for i := range n {
			r.Ask(id(i))
			if r.Answer(id(i)) {
				t.Fatalf("%d calls: the first result of %s read as a repeat", n, id(i))
			}
		}
		for i := range n {
			if !r.Answer(id(i)) {
				t.Errorf("%d calls: the second result of %s read as new", n, id(i))
			}
		}
		r.Ask(id(0))
		if r.Answer(id(0)) {
			t.Errorf("%d calls: a call asked for again read its result as a repeat", n)
		}
		r.Reset()
		if r.Answer(id(1)) {
			t.Errorf("%d calls: a result after Reset read as a repeat", n)
		}
	}
}
