package nested

// Walk calls fn for every run below r, depth first, parents before
// children.
func (r *Result) Walk(fn func(*Run)) {
	if r == nil {
		return
	}
	for _, run := range r.Runs {
		fn(run)
		for i := range run.Items {
			run.Items[i].Nested.Walk(fn)
		}
	}
}
