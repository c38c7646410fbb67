package framing

import "bytes"

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
// exact size, and forgets the pieces so they can be collected. bytes.Join
// makes that buffer without zeroing it first, which every byte of it is
// about to overwrite: for records of megabytes, clearing was a tenth of
// a replay's CPU.
func (p *pieces) whole(tails ...[]byte) []byte {
	p.list = append(p.list, tails...)
	b := bytes.Join(p.list, nil)
	p.reset()
	return b
}

// reset forgets the pieces so they can be collected.
func (p *pieces) reset() {
	clear(p.list)
	p.list, p.n = p.list[:0], 0
}
