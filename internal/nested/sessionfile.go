package nested

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// SessionReader reads the child session file a results[] entry names in
// `sessionFile` (tools that persist their children's sessions name it): the
// child's messages, in file order, and its session id. When it reads, those
// messages are the run's, in place of the entry's `messages` copy: the file
// is the child's own record, and one source only keeps the totals single.
// When it fails, the copy is used and Dropped.UnreadFiles counts it. A file
// already being read (one that names itself, or a cycle through its
// children) is not read again: the copy is used and Dropped.Cycles counts
// it.
type SessionReader func(path string) (msgs []json.RawMessage, id string, err error)

// ErrNotSession is returned for a file whose first line is no Pi session
// header: a result names no other file pi-otel would read.
var ErrNotSession = errors.New("nested: not a Pi session file")

// ReadSessionFile is the SessionReader of the files on this machine: at most
// maxBytes are read, and only a file that starts with a session header.
func ReadSessionFile(maxBytes int) SessionReader {
	return func(path string) ([]json.RawMessage, string, error) {
		f, err := OpenFile(path, int64(maxBytes))
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, int64(maxBytes)+1))
		if err != nil {
			return nil, "", err
		}
		if len(b) > maxBytes {
			return nil, "", fmt.Errorf("nested: session file %s is over %d bytes", path, maxBytes)
		}
		return SessionMessages(b)
	}
}

// OpenFile opens the session file at path, a regular file of at most
// maxBytes: a file a result or a header names may be any path, and a FIFO
// would block the read, a device never end.
func OpenFile(path string, maxBytes int64) (*os.File, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("nested: %s is not a regular file", path)
	} else if st.Size() > maxBytes {
		return nil, fmt.Errorf("nested: session file %s is over %d bytes", path, maxBytes)
	}
	return os.Open(path)
}

// SessionMessages returns the messages of a session file's bytes and its
// session id. The messages alias b, but for a last line with no LF.
func SessionMessages(b []byte) ([]json.RawMessage, string, error) {
	var id string
	var msgs []json.RawMessage
	first, bad, tail := true, false, false
	// framing cuts the lines as it cuts Pi's stream; the lines of b are
	// b's own bytes, and only the unterminated last one is a copy.
	sp := framing.NewSplitter(func(line []byte) {
		line = bytes.TrimSpace(line)
		if bad || len(line) == 0 {
			return
		}
		if first {
			// Walked, not validated, as the entries below it are.
			h := event.ReadHeader(line)
			bad, id, first = !h.Object || h.Type != event.TypeSession, h.ID, false
			return
		}
		var typ string
		var msg []byte
		ok := event.Members(line, func(k, v []byte) bool {
			switch {
			case event.Key(k, "type"):
				_ = event.ReadString(v, &typ)
			case event.Key(k, "message"):
				msg = v
			}
			return true
		})
		// A damaged line is skipped, as the session reader skips it.
		if ok && typ == "message" && len(msg) > 0 && msg[0] == '{' {
			if tail {
				msg = bytes.Clone(msg) // the Splitter's, not b's
			}
			msgs = append(msgs, msg)
		}
	})
	_, _ = sp.Write(b)
	tail = true
	sp.Flush()
	if first || bad {
		return nil, "", ErrNotSession
	}
	return msgs, id, nil
}

// Origin is where a tool result was read, for the child session files it
// names. A relative name resolves against the folder of the file that
// names it: File for the result's own, the child's file for those in the
// child's messages. With no File (a session piped on stdin), it resolves
// against Cwd, Pi's working directory from the session header, where Pi
// ran the tool; with neither, or a Cwd that is no absolute path here, it
// is not read (Dropped.UnreadFiles): pi-otel's own directory is no place
// of Pi's.
type Origin struct {
	// File is the session file that holds the result: at the bottom of
	// the read stack, so that a result naming it is a cycle.
	File string
	Cwd  string
}

// openFile is a session file on the parser's read stack: the files whose
// messages are being read, outermost first.
type openFile struct {
	path string
	info os.FileInfo // nil when it does not stat
}

// child reads the session file e names, when there is a reader: its
// messages replace e's copy. It returns the child's session id, "" when
// the copy stays; cycle says the file was being read, and is counted.
// When id is not "", the file is on the read stack until the caller, done
// with the run, calls leave.
func (p *parser) child(e *entry) (id string, cycle bool) {
	if e.SessionFile == "" || p.sessions == nil {
		return "", false
	}
	f, ok := locate(e.SessionFile, p.base())
	if !ok {
		p.dropped.UnreadFiles++
		return "", false
	}
	if p.onStack(f) {
		// A file that names itself, or an ancestor of its own: following
		// it would trace the same messages again, level after level. The
		// copy, if any, stands, as for a file that does not read.
		p.dropped.Cycles++
		return "", true
	}
	msgs, id, err := p.sessions(f.path)
	if err != nil {
		p.dropped.UnreadFiles++
		return "", false
	}
	if msgs == nil {
		msgs = []json.RawMessage{}
	}
	e.Messages = msgs
	if id == "" {
		id = "unknown"
	}
	p.files = append(p.files, f)
	return id, false
}

// base is the folder relative names resolve against: the file being read,
// else the origin's; "" when there is none. The first call places the
// origin's file at the bottom of the read stack.
func (p *parser) base() string {
	if !p.rooted {
		p.rooted = true
		if p.from.File != "" {
			// A relative File names a file on the command line: pi-otel's
			// own directory is where it is.
			if abs, err := filepath.Abs(p.from.File); err == nil {
				f, _ := locate(abs, "")
				p.files = append(p.files, f)
			}
		}
	}
	if n := len(p.files); n > 0 {
		return filepath.Dir(p.files[n-1].path)
	}
	if filepath.IsAbs(p.from.Cwd) {
		return p.from.Cwd
	}
	return ""
}

// locate makes name a clean absolute path, relative to base, and finds
// which file it is; false when it is relative and there is no base.
func locate(name, base string) (openFile, bool) {
	if !filepath.IsAbs(name) {
		if base == "" {
			return openFile{}, false
		}
		name = filepath.Join(base, name)
	}
	f := openFile{path: filepath.Clean(name)}
	if st, err := os.Stat(f.path); err == nil {
		f.info = st
	}
	return f, true
}

// leave takes the file child read last off the read stack.
func (p *parser) leave() { p.files = p.files[:len(p.files)-1] }

// onStack reports whether f is a file being read: the same path, or the
// same file by another name (a link, another spelling).
func (p *parser) onStack(f openFile) bool {
	return slices.ContainsFunc(p.files, func(g openFile) bool {
		return g.path == f.path || f.info != nil && g.info != nil && os.SameFile(f.info, g.info)
	})
}
