package streamgen

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Generate returns a stream of at least size bytes, in memory, for tests
// and benchmarks.
func Generate(size int64, opts ...Option) ([]byte, Stats) {
	var b bytes.Buffer
	b.Grow(int(size) + 16<<20)
	st, _ := Write(&b, size, opts...) // a bytes.Buffer never fails
	return b.Bytes(), st
}

// BenchStream is the realistic stream the benchmarks of docs/performance.md
// share: 32 MiB with the default options, and its records. It is generated
// once per test binary; callers must not modify it.
func BenchStream() (data []byte, records [][]byte) { return benchStream() }

var benchStream = sync.OnceValues(func() ([]byte, [][]byte) {
	data, _ := Generate(32 << 20)
	return data, Records(data)
})

// Records splits a generated stream into its records, without the LFs.
func Records(stream []byte) [][]byte {
	recs := bytes.Split(bytes.TrimSuffix(stream, []byte("\n")), []byte("\n"))
	if len(recs) == 1 && len(recs[0]) == 0 {
		return nil
	}
	return recs
}

// Kind names a record as [Stats.Types] does: its type, and for a
// message_update its assistantMessageEvent type too. It uses encoding/json
// on purpose: it is the yardstick, not the thing measured.
func Kind(rec []byte) string {
	var head struct {
		Type string `json:"type"`
		AME  *struct {
			Type string `json:"type"`
		} `json:"assistantMessageEvent"`
	}
	if json.Unmarshal(rec, &head) != nil {
		return ""
	}
	if head.Type == "message_update" && head.AME != nil {
		return head.Type + "/" + head.AME.Type
	}
	return head.Type
}
