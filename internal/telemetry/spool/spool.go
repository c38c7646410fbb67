// Package spool keeps spans that could not reach the collector before a
// short pi-otel process had to exit, and hands them to the next process.
//
// Most Pi runs last seconds; a collector that is restarting or briefly
// unreachable would otherwise lose them all. Each undelivered batch is
// written, atomically, as one OTLP protobuf file in a directory private to
// the user. The next pi-otel process that exports over OTLP (run, rpc,
// replay or watch) sends the spool first, oldest file first.
//
// A spooled span counts as delivered (watch moves its state past it), so
// the spool never deletes one to make room: at its size bound it refuses
// new requests (ErrFull), whose spans are then not delivered and say so.
// Its age bound drops a request held too long, unsent, and counts and
// names it.
package spool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Config bounds a spool.
type Config struct {
	// Dir holds the spool files; it is created 0700.
	Dir string
	// MaxBytes bounds the files in Dir together: a request that does not
	// fit is refused. Processes writing at the same moment may each take
	// the last room, passing the bound by a request or two.
	MaxBytes int64
	// MaxAge is how long a request is worth sending: one spooled longer
	// ago is dropped, unsent, when a process finds it.
	MaxAge time.Duration
	// Corrupt, if set, is told of each damaged file once, when it is set
	// aside as NAME.corrupt (where it stays for a person to look at).
	Corrupt func(path string, err error)
	// Expired, if set, is told of each request dropped by MaxAge: its
	// spans and how long it was spooled.
	Expired func(spans int64, age time.Duration)
}

// Validate reports a Config Open cannot use. Zero bounds are valid: they
// take the defaults.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("spool: no directory")
	case c.MaxBytes < 0 || c.MaxAge < 0:
		return fmt.Errorf("spool: negative bound (%d bytes, %s)", c.MaxBytes, c.MaxAge)
	}
	return nil
}

// Defaults.
const (
	DefaultMaxBytes = 64 << 20
	DefaultMaxAge   = 7 * 24 * time.Hour
)

// Stats counts spans through the spool over this process's life.
type Stats struct {
	Spooled int64 // spans written for a later process
	Full    int64 // spans not written: the spool was at its size bound (ErrFull)
	Late    int64 // spans from earlier processes delivered now
	Resent  int64 // spans this process spooled and then delivered itself
	Refused int64 // spans from earlier processes the collector refused (ErrRefused)
	Expired int64 // spans held past the age bound, dropped unsent
	Corrupt int64 // damaged files set aside, their spans unknown
}

// Spool is safe for concurrent use, also by several processes.
type Spool struct {
	cfg                                   Config
	spooled, full, late, expired, refused atomic.Int64
	corrupt                               atomic.Int64
	seq                                   atomic.Int64
	resent                                atomic.Int64
	// mine names the files this process spooled and has not sent: a
	// long-lived process (watch) often sends them itself once the
	// collector answers, and they are then not another process's.
	mu   sync.Mutex
	mine map[string]bool
	// readDir, if set, is called after each reading of the directory: a
	// test renames files there as a sender does.
	readDir func()
}

const suffix = ".otlp"

// claimAfter is when a file claimed by a process that died mid-send may
// be claimed again.
const claimAfter = 10 * time.Minute

// Open prepares the spool directory. It refuses a directory that is not
// the user's own, or that is a symlink, since spans can hold paths and
// errors.
func Open(cfg Config) (*Spool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.MaxBytes = cmp.Or(max(cfg.MaxBytes, 0), DefaultMaxBytes)
	cfg.MaxAge = cmp.Or(max(cfg.MaxAge, 0), DefaultMaxAge)
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	fi, err := os.Lstat(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("spool: %s is not a directory", cfg.Dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return nil, fmt.Errorf("spool: %s belongs to uid %d, not to you", cfg.Dir, st.Uid)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(cfg.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
	}
	return &Spool{cfg: cfg, mine: map[string]bool{}}, nil
}

// Dir is where the spool lives.
func (s *Spool) Dir() string { return s.cfg.Dir }

// Stats returns the counters.
func (s *Spool) Stats() Stats {
	return Stats{Spooled: s.spooled.Load(), Full: s.full.Load(), Late: s.late.Load(), Resent: s.resent.Load(),
		Refused: s.refused.Load(), Expired: s.expired.Load(), Corrupt: s.corrupt.Load()}
}

// ErrFull is Put's answer when the request does not fit the size bound.
var ErrFull = errors.New("spool full")

// Put writes one request for a later process. One that would take the
// spool past its size bound is refused with an error wrapping ErrFull,
// and nothing spooled is removed to make room for it; requests past the
// age bound are dropped first, as they would never be sent.
func (s *Spool) Put(req *coltracepb.ExportTraceServiceRequest) error {
	n := spans(req)
	if n == 0 {
		return nil
	}
	b, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	s.expire()
	if used := s.used(); used+int64(len(b)) > s.cfg.MaxBytes {
		s.full.Add(int64(n))
		return fmt.Errorf("%w: %s holds %s of its %s, and %d spans (%s) do not fit",
			ErrFull, s.cfg.Dir, size(used), size(s.cfg.MaxBytes), n, size(int64(len(b))))
	}
	// Names sort by time; the pid and a counter keep them unique.
	name := fmt.Sprintf("%020d-%d-%d%s", time.Now().UnixNano(), os.Getpid(), s.seq.Add(1), suffix)
	tmp, err := os.CreateTemp(s.cfg.Dir, ".put-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	s.setMine(name, true)
	if err := os.Rename(tmp.Name(), filepath.Join(s.cfg.Dir, name)); err != nil {
		s.setMine(name, false)
		os.Remove(tmp.Name())
		return err
	}
	s.spooled.Add(int64(n))
	return nil
}

// size is n bytes for a person.
func size(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", (n+1023)>>10)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// Upload delivers one request, as an OTLP client does. An error that
// wraps ErrRefused says the collector will never take the request: it
// leaves the spool, counted as refused.
type Upload func(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) error

// ErrRefused marks an upload the collector refused outright.
var ErrRefused = errors.New("refused by the collector")

// Drain sends the spool, oldest first, until it is empty, ctx ends or an
// upload fails (the collector is still away: the rest waits for the next
// process).
func (s *Spool) Drain(ctx context.Context, upload Upload) error {
	s.expire()
	for _, f := range s.files() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Claim the file, so that two processes never send it twice.
		claimed := filepath.Join(s.cfg.Dir, ".sending-"+strconv.Itoa(os.Getpid())+"-"+f.name)
		if err := os.Rename(filepath.Join(s.cfg.Dir, f.name), claimed); err != nil {
			continue // another process took it
		}
		req, n, err := read(claimed)
		if err != nil {
			s.setAside(claimed, f.name, err)
			continue
		}
		// Counted before the file goes: whoever sees the spool without it
		// finds its spans in Stats.
		err = upload(ctx, req)
		switch {
		case errors.Is(err, ErrRefused):
			s.refused.Add(int64(n))
			s.setMine(f.name, false)
			os.Remove(claimed)
			continue
		case err != nil:
			os.Rename(claimed, filepath.Join(s.cfg.Dir, f.name))
			return err
		}
		if s.setMine(f.name, false) {
			s.resent.Add(int64(n))
		} else {
			s.late.Add(int64(n))
		}
		os.Remove(claimed)
	}
	return nil
}

// setMine marks (or unmarks) name as spooled by this process; it reports
// whether it was.
func (s *Spool) setMine(name string, mine bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.mine[name]
	if mine {
		s.mine[name] = true
	} else {
		delete(s.mine, name)
	}
	return was
}

type file struct {
	name string
	size int64
	mod  time.Time
}

// files lists the spool, oldest first, after releasing claims that a dead
// process left behind.
func (s *Spool) files() []file {
	held, _ := s.list()
	return held
}

// used is what the spool holds against its size bound: its files, and
// those being sent, which come back if the send fails.
func (s *Spool) used() int64 {
	held, sending := s.list()
	total := sending
	for _, f := range held {
		total += f.size
	}
	return total
}

// list is files, and the bytes of the files claimed by a sender.
//
// A sender renames the file it claims, and renames it back if the send
// fails. A file renamed between reading the directory and stat-ing the
// entry would be seen under neither name, and a Put would take the room
// it holds, so a listing in which an entry vanished is read again. A
// rename is atomic: the next reading finds the file under one name (or
// gone: sent). The attempts are bounded, as other processes may keep
// renaming; the last listing stands.
func (s *Spool) list() (out []file, sending int64) {
	for range 8 {
		var vanished bool
		if out, sending, vanished = s.read(); !vanished {
			break
		}
	}
	return out, sending
}

// read is one listing for list; vanished reports an entry that was
// renamed or removed while it was read.
func (s *Spool) read() (out []file, sending int64, vanished bool) {
	ents, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return nil, 0, false
	}
	if s.readDir != nil {
		s.readDir()
	}
	for _, e := range ents {
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			vanished = true
			continue
		}
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		name := e.Name()
		if strings.HasPrefix(name, ".sending-") && time.Since(info.ModTime()) > claimAfter {
			parts := strings.SplitN(name, "-", 3) // ".sending", pid, original name
			if len(parts) == 3 && os.Rename(filepath.Join(s.cfg.Dir, name), filepath.Join(s.cfg.Dir, parts[2])) == nil {
				name = parts[2]
			}
		}
		if strings.HasPrefix(name, ".sending-") && strings.HasSuffix(name, suffix) {
			sending += info.Size()
			continue
		}
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, suffix) {
			continue
		}
		out = append(out, file{name: name, size: info.Size(), mod: info.ModTime()})
	}
	slices.SortFunc(out, func(a, b file) int { return strings.Compare(a.name, b.name) })
	return out, sending, vanished
}

// expire drops the files spooled longer ago than the age bound, counting
// their spans and telling Config.Expired; a damaged one is set aside.
func (s *Spool) expire() {
	for _, f := range s.files() {
		age := time.Since(f.mod)
		if age <= s.cfg.MaxAge {
			continue
		}
		p := filepath.Join(s.cfg.Dir, f.name)
		_, n, err := read(p)
		if errors.Is(err, errDamaged) {
			s.setAside(p, f.name, err)
			continue
		}
		if err == nil && os.Remove(p) == nil {
			s.setMine(f.name, false)
			s.expired.Add(int64(n))
			if s.cfg.Expired != nil {
				s.cfg.Expired(int64(n), age)
			}
		}
	}
}

// corruptSuffix marks a damaged file set aside; files() no longer lists
// it, so it is named once.
const corruptSuffix = ".corrupt"

// errDamaged is a file that is not an OTLP request: truncated by a full
// disk, or written over by something else.
var errDamaged = errors.New("not an OTLP trace request")

// setAside renames a damaged file (at path, listed as name) to
// name.corrupt rather than deleting it: its spans cannot be counted, but
// a person may still want it.
func (s *Spool) setAside(path, name string, err error) {
	aside := filepath.Join(s.cfg.Dir, name+corruptSuffix)
	if os.Rename(path, aside) != nil {
		return // another process moved it first, and counts it
	}
	s.corrupt.Add(1)
	s.setMine(name, false)
	if s.cfg.Corrupt != nil {
		s.cfg.Corrupt(aside, err)
	}
}

func read(path string) (*coltracepb.ExportTraceServiceRequest, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errDamaged, err)
	}
	return req, spans(req), nil
}

func spans(req *coltracepb.ExportTraceServiceRequest) int {
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	return n
}
