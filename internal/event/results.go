package event

import "slices"

// Results tells a tool result from the same result given again. Pi answers
// each tool call once; a second result for a call id that has its result,
// with no model call asking for that id again since, is that result
// written again (an entry re-saved, a child's messages collected twice,
// a child's last result repeated after its final answer): one execution,
// to be traced once. A call id that a later model call asks for again is
// a new call.
//
// Both the session translator and the nested parser read results with it,
// so the rule is the same at every depth. The zero value is ready to use.
type Results struct {
	// answered are the ids with their result: a list while short (a run
	// has a few calls), a set beside it once long.
	answered []string
	set      map[string]struct{}
}

// resultsListMax is the longest answered list searched one by one.
const resultsListMax = 32

// Ask records a model call asking for call id: its next result is new.
func (r *Results) Ask(id string) {
	if r.set != nil {
		delete(r.set, id)
		return
	}
	if i := slices.Index(r.answered, id); i >= 0 {
		r.answered[i] = r.answered[len(r.answered)-1]
		r.answered = r.answered[:len(r.answered)-1]
	}
}

// Answer records a result for call id and reports whether it repeats one
// already given.
func (r *Results) Answer(id string) (repeat bool) {
	if r.set != nil {
		if _, ok := r.set[id]; ok {
			return true
		}
		r.set[id] = struct{}{}
		return false
	}
	if slices.Contains(r.answered, id) {
		return true
	}
	if len(r.answered) < resultsListMax {
		r.answered = append(r.answered, id)
		return false
	}
	r.set = make(map[string]struct{}, 2*resultsListMax)
	for _, a := range r.answered {
		r.set[a] = struct{}{}
	}
	r.set[id] = struct{}{}
	r.answered = r.answered[:0]
	return false
}

// Reset forgets every call, keeping the list's memory.
func (r *Results) Reset() {
	clear(r.answered)
	r.answered, r.set = r.answered[:0], nil
}
