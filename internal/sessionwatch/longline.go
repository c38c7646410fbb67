package sessionwatch

import (
	"bytes"
	"io"
	"runtime"
)

// lineBuffer returns a buffer for the line that starts at off in r and
// fills all of buf: one of the line's exact length when the line is
// complete in the file, nil when it is still being written. A line of 80
// MB then costs 80 MB, where doubling the buffer until it fit cost three
// times that (the old buffer, the new one and the garbage of the steps
// before), more than the systemd unit in examples/ allows.
func lineBuffer(r io.ReaderAt, off int64, buf []byte) []byte {
	scratch := make([]byte, 64<<10)
	for pos := off + int64(len(buf)); ; {
		n, err := r.ReadAt(scratch, pos)
		if i := bytes.IndexByte(scratch[:n], '\n'); i >= 0 {
			size := pos + int64(i) + 1 - off
			if size > 16<<20 {
				// The buffer of an earlier long line may still be garbage:
				// freed first, the peak is one line, not two.
				runtime.GC()
			}
			line := make([]byte, size)
			copy(line, buf)
			return line
		}
		pos += int64(n)
		if err != nil || n == 0 {
			return nil
		}
	}
}
