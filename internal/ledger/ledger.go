// Package ledger records which runs of Pi's sessions were traced, so
// that each is traced once whatever file holds it. The session pipeline
// owns one per follower: it claims each run a session file completes
// before the run is mapped, and the follower keeps the ledger in its
// state and commits or gives back its claims as the flush says.
package ledger

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"slices"
	"strconv"
	"time"
)

// Ledger records which runs were traced, per session, whatever file held
// them: a session is its header's id, not its file. A copy, a backup, a
// snapshot, a file replaced by temp file and rename, a second name, a
// restart: each run is traced once, because its key is claimed once.
//
// A run is known by two keys, each a 64-bit hash: its session and first
// entry's id (the key its span ids derive from), and its session and
// start time. Either one marks it traced. The ids of a version 1 file
// derive from offsets, and Pi gives its entries new ids when it migrates
// the file in place; the times stay.
//
// Claims since the last commit are pending: an export that fails gives
// them back, to be claimed again, and the span metrics do not count a run
// twice (counted).
type Ledger struct {
	sessions map[string]*sessionRuns
	pending  []claimed
	counted  map[uint64]struct{}
}

// Session is one session's record, as Save gives it (in the follower's
// state file).
type Session struct {
	ID string `json:"id"`
	// Since: runs begun before it (Unix nanoseconds) are history, never
	// traced; 0 for none.
	Since int64 `json:"since,omitempty"`
	// Runs are the keys of the runs traced, 64-bit hashes in base64.
	Runs string `json:"runs,omitempty"`
}

// sessionRuns is one session's record.
type sessionRuns struct {
	// since: runs begun before it (Unix nanoseconds) are history, not
	// traced; 0 for none. Set for the sessions on disk at the first start.
	since int64
	done  map[uint64]struct{}
	// enc is done encoded, as saved; "" once done has changed.
	enc string
}

type claimed struct {
	s      *sessionRuns
	id, at uint64 // the two keys; at is 0 for a run with no time
}

// New returns an empty Ledger.
func New() *Ledger {
	return &Ledger{sessions: map[string]*sessionRuns{}, counted: map[uint64]struct{}{}}
}

func (l *Ledger) session(id string) *sessionRuns {
	s := l.sessions[id]
	if s == nil {
		s = &sessionRuns{done: map[uint64]struct{}{}}
		l.sessions[id] = s
	}
	return s
}

// keys are the two hashes of a run.
func keys(session, key string, start time.Time) (id, at uint64) {
	h := fnv.New64a()
	h.Write([]byte{'k'})
	h.Write([]byte(key))
	id = h.Sum64()
	if !start.IsZero() {
		h.Reset()
		h.Write([]byte{'t'})
		h.Write([]byte(session))
		h.Write([]byte{0})
		h.Write(strconv.AppendInt(nil, start.UnixMilli(), 10))
		at = h.Sum64()
	}
	return id, at
}

// Claim reports whether the run of session keyed key (the id of its
// first entry, or of a lone entry), begun at start, is traced now: it is
// not history and neither of its keys was claimed. If so it is claimed,
// and count says whether it counts in the span metrics (not when it is
// traced again after a failed export).
func (l *Ledger) Claim(session, key string, start time.Time) (trace, count bool) {
	s := l.session(session)
	if s.since != 0 && !start.IsZero() && start.UnixNano() < s.since {
		return false, false
	}
	id, at := keys(session, key, start)
	if s.has(id, at) {
		return false, false
	}
	l.add(s, id, at)
	_, again := l.counted[id]
	return true, !again
}

// Traced records a run an earlier pi-otel traced, known then only by its
// place in the file, so that it is never traced again.
func (l *Ledger) Traced(session, key string, start time.Time) {
	s := l.session(session)
	if id, at := keys(session, key, start); !s.has(id, at) {
		l.add(s, id, at)
	}
}

func (s *sessionRuns) has(id, at uint64) bool {
	if _, ok := s.done[id]; ok {
		return true
	}
	_, ok := s.done[at]
	return at != 0 && ok
}

func (l *Ledger) add(s *sessionRuns, id, at uint64) {
	s.done[id] = struct{}{}
	if at != 0 {
		s.done[at] = struct{}{}
	}
	s.enc = ""
	l.pending = append(l.pending, claimed{s, id, at})
}

// History marks the runs of a session begun before since as history, if
// nothing has yet.
func (l *Ledger) History(session string, since time.Time) {
	if s := l.session(session); s.since == 0 {
		s.since = since.UnixNano()
	}
}

// Pending reports claims made since the last Commit or Fail.
func (l *Ledger) Pending() bool { return len(l.pending) > 0 }

// Commit makes the pending claims permanent: their spans were exported.
func (l *Ledger) Commit() {
	for _, c := range l.pending {
		delete(l.counted, c.id)
	}
	l.pending = l.pending[:0]
}

// Fail gives the pending claims back: their runs are traced again, with
// the same ids, but not counted again.
func (l *Ledger) Fail() {
	for _, c := range l.pending {
		delete(c.s.done, c.id)
		if c.at != 0 {
			delete(c.s.done, c.at)
		}
		c.s.enc = ""
		l.counted[c.id] = struct{}{}
	}
	l.pending = l.pending[:0]
}

// Save encodes the sessions without their pending claims: a state written
// while they wait for the exporter must not record them.
func (l *Ledger) Save() []Session {
	held := map[*sessionRuns][]uint64{}
	for _, c := range l.pending {
		held[c.s] = append(held[c.s], c.id, c.at)
	}
	out := make([]Session, 0, len(l.sessions))
	for id, s := range l.sessions {
		if len(s.done) == 0 && s.since == 0 {
			continue
		}
		var runs string
		if h, ok := held[s]; ok {
			runs = encodeRuns(s.done, h)
		} else {
			if s.enc == "" {
				s.enc = encodeRuns(s.done, nil)
			}
			runs = s.enc
		}
		out = append(out, Session{ID: id, Since: s.since, Runs: runs})
	}
	slices.SortFunc(out, func(a, b Session) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// ErrDamaged is a saved session whose run keys do not decode.
var ErrDamaged = errors.New("its run keys do not decode")

// Load takes the sessions Save gave.
func (l *Ledger) Load(sessions []Session) error {
	for _, ss := range sessions {
		s := l.session(ss.ID)
		s.since = ss.Since
		b, err := base64.StdEncoding.DecodeString(ss.Runs)
		if err != nil || len(b)%8 != 0 {
			return ErrDamaged
		}
		for i := 0; i < len(b); i += 8 {
			s.done[binary.LittleEndian.Uint64(b[i:])] = struct{}{}
		}
		s.enc = ss.Runs
	}
	return nil
}

// encodeRuns is the keys of done, but those in held, sorted, as
// little-endian 64-bit words in base64: 11 bytes a key in the state.
func encodeRuns(done map[uint64]struct{}, held []uint64) string {
	ks := make([]uint64, 0, len(done))
	for k := range done {
		if !slices.Contains(held, k) {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	b := make([]byte, 8*len(ks))
	for i, k := range ks {
		binary.LittleEndian.PutUint64(b[8*i:], k)
	}
	return base64.StdEncoding.EncodeToString(b)
}
