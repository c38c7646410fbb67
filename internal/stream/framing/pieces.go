package framing

// pieces holds the start of a record that outgrew the buffer kept for
// reuse, as the filled buffers it was read into. They are never grown or
// copied while the record goes on; once its end is known, whole copies
// them once into a buffer of the exact size. Growing one buffer instead
// copies the record again on every step and leaves the old buffers as
// garbage: 3 to 5 times the record allocated, against 2 here.
type pieces struct {
	list [][]byte
	n    int // bytes in list
}

func (p *pieces) add(b []byte) {
	if len(b) == 0 {
		return
	}
	p.list = append(p.list, b)
	p.n += len(b)
}

func (p *pieces) empty() bool { return p.n == 0 }

// whole returns the pieces followed by the tails, in one new buffer of the
// exact size, and forgets the pieces so they can be collected.
func (p *pieces) whole(tails ...[]byte) []byte {
	n := p.n
	for _, t := range tails {
		n += len(t)
	}
	b := make([]byte, 0, n)
	for _, q := range p.list {
		b = append(b, q...)
	}
	for _, t := range tails {
		b = append(b, t...)
	}
	p.reset()
	return b
}

// reset forgets the pieces so they can be collected.
func (p *pieces) reset() {
	clear(p.list)
	p.list, p.n = p.list[:0], 0
}
