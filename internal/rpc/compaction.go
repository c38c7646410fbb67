package rpc

// parentIdleCompaction hangs a compaction that starts with no run open
// under the `compact` command that asked for it; the mapper would
// otherwise make it a trace apart from its cause.
func (t *Tracker) parentIdleCompaction() {
	if t.m.Active() {
		return
	}
	for _, c := range t.pending.all() {
		if c.name == "compact" && c.span != nil {
			t.m.ParentNextIdleCompaction(c.ctx)
		}
	}
}
