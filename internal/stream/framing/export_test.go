package framing

import "io"

// ChunkReader lets the external tests read data in reads of the given
// sizes, as [chunkReader] does; Len says how much is left unread.
func ChunkReader(data []byte, sizes ...int) interface {
	io.Reader
	Len() int
} {
	return &chunkReader{data: data, sizes: sizes}
}

// Stats reports what the Reader has seen so far.
func (r *Reader) Stats() Stats { return r.stats }
