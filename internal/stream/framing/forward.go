package framing

import "io"

// Forward copies src to dst and hands every record to emit. Each chunk is
// written to dst before it is split, so tracing never delays the consumer.
//
// When a write to dst fails (for example EPIPE after `| head -1`), Forward
// stops writing but keeps reading and splitting src to its end, so the
// producer is never stalled and the trace completes; the first write error
// is reported in Stats.DstErr. A short write without an error counts as
// io.ErrShortWrite. The returned error is src's read error, nil at EOF; the
// unterminated tail is emitted either way.
//
// emit follows the [Splitter] rules: the record is only valid during the
// call. Forward reads into one reused buffer; only a record spanning reads
// is copied.
func Forward(dst io.Writer, src io.Reader, emit func(record []byte), opts ...Option) (Stats, error) {
	c := newConfig(opts)
	s := NewSplitter(emit, opts...)
	buf := make([]byte, c.readSize)
	var dstErr, err error
	empty := 0
	for {
		n, rerr := src.Read(buf)
		if n < 0 || n > len(buf) {
			err = errBadRead
			break
		}
		if n > 0 {
			empty = 0
			chunk := buf[:n]
			if dstErr == nil {
				w, werr := dst.Write(chunk)
				if werr == nil && w != n {
					werr = io.ErrShortWrite
				}
				dstErr = werr
			}
			s.Write(chunk)
		}
		if rerr != nil {
			if rerr != io.EOF {
				err = rerr
			}
			break
		}
		if n == 0 {
			if empty++; empty >= maxEmptyReads {
				err = io.ErrNoProgress
				break
			}
		}
	}
	s.Flush()
	st := s.Stats()
	st.DstErr = dstErr
	return st, err
}
