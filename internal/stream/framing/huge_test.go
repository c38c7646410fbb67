package framing_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

const hugeSize = 64 << 20

// hugeStream returns a small record, a 64 MiB record ended by CRLF, and an
// unterminated small record; the huge record carries lone CRs and raw
// U+2028/U+2029 throughout.
func hugeStream() (stream []byte, want [][]byte) {
	head := []byte(`{"type":"message_update","delta":"`)
	foot := []byte(`"}`)
	piece := []byte("abc\rdef\u2028ghi\u2029jkl ")
	huge := make([]byte, 0, hugeSize)
	huge = append(huge, head...)
	for len(huge)+len(piece)+len(foot) <= hugeSize {
		huge = append(huge, piece...)
	}
	huge = append(huge, bytes.Repeat([]byte("x"), hugeSize-len(huge)-len(foot))...)
	huge = append(huge, foot...)

	first := []byte(`{"type":"session"}`)
	last := []byte(`{"type":"agent_end"}`)
	stream = append(stream, first...)
	stream = append(stream, '\n')
	stream = append(stream, huge...)
	stream = append(stream, "\r\n"...)
	stream = append(stream, last...)
	return stream, [][]byte{first, huge, last}
}

func checkHuge(t *testing.T, what string, got, want [][]byte) {
	t.Helper()
	if len(want[1]) != hugeSize {
		t.Fatalf("test setup: huge record is %d bytes", len(want[1]))
	}
	checkRecords(t, what, got, want)
}

func TestHugeRecordSplitter(t *testing.T) {
	stream, want := hugeStream()
	for _, chunk := range []int{64 << 10, 1<<20 + 7, len(stream)} {
		var c collector
		s := framing.NewSplitter(c.emit)
		for p := stream; len(p) > 0; {
			n := min(chunk, len(p))
			s.Write(p[:n])
			p = p[n:]
		}
		s.Flush()
		checkHuge(t, "chunk "+itoa(chunk), c.records, want)
		if st := s.Stats(); st.LargestRecord != hugeSize || st.Records != 3 {
			t.Fatalf("Stats = %+v", st)
		}
	}
}

func TestHugeRecordReader(t *testing.T) {
	stream, want := hugeStream()
	for _, size := range []int{0, 4093} {
		var opts []framing.Option
		if size > 0 {
			opts = append(opts, framing.WithReadSize(size))
		}
		r := framing.NewReader(bytes.NewReader(stream), opts...)
		got, err := readAll(r)
		if err != io.EOF {
			t.Fatalf("error %v", err)
		}
		checkHuge(t, "read size "+itoa(size), got, want)
		if st := r.Stats(); st.LargestRecord != hugeSize || st.Bytes != int64(len(stream)) {
			t.Fatalf("Stats = %+v", st)
		}
	}
}

func TestHugeRecordForward(t *testing.T) {
	stream, want := hugeStream()
	var c collector
	var dst bytes.Buffer
	st, err := framing.Forward(&dst, bytes.NewReader(stream), c.emit)
	if err != nil || st.DstErr != nil {
		t.Fatalf("Forward = %v, DstErr %v", err, st.DstErr)
	}
	if !bytes.Equal(dst.Bytes(), stream) {
		t.Fatalf("dst differs from src (%d vs %d bytes)", dst.Len(), len(stream))
	}
	checkHuge(t, "Forward", c.records, want)
	if st.LargestRecord != hugeSize || st.Bytes != int64(len(stream)) {
		t.Fatalf("Stats = %+v", st)
	}
}
