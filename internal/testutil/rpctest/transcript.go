package rpctest

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode/utf8"
)

// transcriptLine is one line of a transcript file: the direction, the
// milliseconds since the first line, and the raw bytes (as a string when
// they are valid UTF-8, else base64).
type transcriptLine struct {
	Dir Dir     `json:"d"`
	Ms  float64 `json:"ms"`
	Raw *string `json:"raw,omitempty"`
	B64 string  `json:"b64,omitempty"`
}

// WriteTranscript writes lines as JSONL, times relative to the first line.
func WriteTranscript(w io.Writer, lines []Line) error {
	var start time.Time
	if len(lines) > 0 {
		start = lines[0].At
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, l := range lines {
		tl := transcriptLine{Dir: l.Dir, Ms: float64(l.At.Sub(start).Microseconds()) / 1000}
		if utf8.Valid(l.Raw) {
			s := string(l.Raw)
			tl.Raw = &s
		} else {
			tl.B64 = base64.StdEncoding.EncodeToString(l.Raw)
		}
		if err := enc.Encode(tl); err != nil {
			return err
		}
	}
	return nil
}

// ReadTranscript reads a file written by WriteTranscript; times are placed
// after start.
func ReadTranscript(r io.Reader, start time.Time) ([]Line, error) {
	var out []Line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var tl transcriptLine
		if err := json.Unmarshal(sc.Bytes(), &tl); err != nil {
			return nil, fmt.Errorf("transcript line %d: %v", n, err)
		}
		var raw []byte
		switch {
		case tl.Raw != nil:
			raw = []byte(*tl.Raw)
		default:
			b, err := base64.StdEncoding.DecodeString(tl.B64)
			if err != nil {
				return nil, fmt.Errorf("transcript line %d: %v", n, err)
			}
			raw = b
		}
		if tl.Dir != In && tl.Dir != Out {
			return nil, fmt.Errorf("transcript line %d: direction %q", n, tl.Dir)
		}
		at := start.Add(time.Duration(tl.Ms * float64(time.Millisecond)))
		out = append(out, Line{Dir: tl.Dir, At: at, Raw: raw, Rec: decode(raw)})
	}
	return out, sc.Err()
}
