// Package vcs reads what git knows about the work tree a live run starts
// in: the repository's URL and name, the branch and the commit, as the
// semantic conventions' vcs.* attributes. Reading is bounded in time and
// runs beside Pi, never before it; a run outside a work tree, without git,
// or on a file system too slow to answer in time simply has none.
//
// A session file does not say which branch was checked out when it was
// written, so history gets none of this: what it has is the cwd.
package vcs

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/pi-otel/pi-otel/internal/option"
)

// DefaultTimeout bounds a read: git answers in a few milliseconds on a
// local disk, and a run's first span starts a second or more after Pi
// does, so waiting this long at most costs the run nothing.
const DefaultTimeout = 300 * time.Millisecond

// Info is what git says about a work tree. Any field may be empty: a
// repository without a remote has no URL, a detached HEAD no branch, one
// without commits no revision.
type Info struct {
	// URL is the remote's, with any user, password or token taken out.
	URL string
	// Name is the remote's last path element without .git, else the
	// work tree's folder name.
	Name     string
	Branch   string
	Revision string
}

// Attributes are the vcs.* attributes of what is known.
func (i Info) Attributes() []attribute.KeyValue {
	var out []attribute.KeyValue
	if i.URL != "" {
		out = append(out, semconv.VCSRepositoryURLFull(i.URL))
	}
	if i.Name != "" {
		out = append(out, semconv.VCSRepositoryName(i.Name))
	}
	if i.Branch != "" {
		out = append(out, semconv.VCSRefHeadName(i.Branch), semconv.VCSRefHeadTypeBranch)
	}
	if i.Revision != "" {
		out = append(out, semconv.VCSRefHeadRevision(i.Revision))
	}
	return out
}

type config struct {
	git     string
	timeout time.Duration
}

// Option configures Read and Start.
type Option = option.Option[config]

// ErrNotRepository says dir is in no git work tree.
var ErrNotRepository = errors.New("not in a git work tree")

// Read asks git about the work tree dir is in, within the timeout.
func Read(ctx context.Context, dir string, opts ...Option) (Info, error) {
	cfg := option.Apply(config{git: "git", timeout: DefaultTimeout}, opts)
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	// One git for the tree, the branch and the commit: on a detached HEAD
	// --symbolic-full-name prints HEAD, in a repository without commits
	// the last two fail and the first line still names the tree.
	out, err := git(ctx, cfg.git, dir, "rev-parse", "--show-toplevel", "HEAD", "--symbolic-full-name", "HEAD")
	if ctx.Err() != nil {
		return Info{}, ctx.Err()
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[0] == "" || !strings.HasPrefix(lines[0], "/") && !isWindowsPath(lines[0]) {
		if err == nil || isNotRepo(err) {
			return Info{}, ErrNotRepository
		}
		return Info{}, err
	}
	info := Info{Name: base(lines[0])}
	if err == nil && len(lines) == 3 {
		info.Revision = lines[1]
		if b, ok := strings.CutPrefix(lines[2], "refs/heads/"); ok {
			info.Branch = b
		}
	}
	remote, _ := git(ctx, cfg.git, dir, "config", "--get", "remote.origin.url")
	if ctx.Err() != nil {
		return info, ctx.Err()
	}
	if u := CleanURL(strings.TrimSpace(string(remote))); u != "" {
		info.URL = u
		info.Name = cmp.Or(remoteName(u), info.Name)
	}
	return info, nil
}

func git(ctx context.Context, bin, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"-C", dir}, args...)...)
	// No lock files, no prompt for a password, no pager, and messages
	// in one language.
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_PAGER=cat")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// A git that leaves a child holding the pipe does not hold us.
	cmd.WaitDelay = 50 * time.Millisecond
	out, err := cmd.Output()
	if err != nil && stderr.Len() > 0 {
		err = &gitError{err: err, stderr: stderr.String()}
	}
	return out, err
}

type gitError struct {
	err    error
	stderr string
}

func (e *gitError) Error() string {
	return "git: " + e.err.Error() + ": " + strings.TrimSpace(e.stderr)
}
func (e *gitError) Unwrap() error { return e.err }

func isNotRepo(err error) bool {
	var ge *gitError
	return errors.As(err, &ge) && strings.Contains(ge.stderr, "not a git repository")
}

func isWindowsPath(p string) bool { return len(p) > 2 && p[1] == ':' }

// base is a path's last element, by / or \.
func base(p string) string {
	p = strings.TrimRight(p, `/\`)
	if i := strings.LastIndexAny(p, `/\:`); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// remoteName is the last element of a cleaned remote URL's path, without
// .git; "" when the URL has no path (what is left of one that did not
// parse is its scheme and host, and neither the host nor its port names
// a repository).
func remoteName(u string) string {
	p := u
	if _, rest, ok := strings.Cut(u, "://"); ok {
		if _, p, ok = strings.Cut(rest, "/"); !ok {
			return ""
		}
	}
	return base(strings.TrimSuffix(strings.TrimRight(p, `/\`), ".git"))
}

// CleanURL takes credentials out of a remote's URL: the user and password
// of a URL (https://user:token@host/...), its query and fragment, and the
// user of scp-like syntax (git@host:org/repo, which becomes
// ssh://host/org/repo). A local path stays a path.
func CleanURL(raw string) string {
	if raw == "" {
		return ""
	}
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			// Unparsable: keep no more than scheme and host, if those.
			scheme, rest, _ := strings.Cut(raw, "://")
			if i := strings.LastIndex(rest, "@"); i >= 0 {
				rest = rest[i+1:]
			}
			host, _, _ := strings.Cut(rest, "/")
			host, _, _ = strings.Cut(host, "?")
			return scheme + "://" + host
		}
		u.User, u.RawQuery, u.Fragment, u.ForceQuery, u.RawFragment = nil, "", "", false, ""
		return u.String()
	}
	// scp-like: [user@]host:path, with no slash before the colon; the
	// user (and anything pasted in with it) goes.
	if isWindowsPath(raw) {
		return raw
	}
	rest := raw
	first, _, _ := strings.Cut(raw, "/")
	if j := strings.LastIndex(first, "@"); j >= 0 {
		rest = raw[j+1:]
	}
	if host, p, ok := strings.Cut(rest, ":"); ok && host != "" && !strings.ContainsAny(host, `/\`) {
		return "ssh://" + host + "/" + strings.TrimPrefix(path.Clean("/"+p), "/")
	}
	return raw
}

// Pending is a read started in the background.
type Pending struct {
	done chan struct{}
	info Info
}

// Start reads beside the caller, which goes on at once (to start Pi).
func Start(ctx context.Context, dir string, opts ...Option) *Pending {
	p := &Pending{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.info, _ = Read(ctx, dir, opts...)
	}()
	return p
}

// Attributes waits for the read, which its timeout bounds, and returns
// what it found.
func (p *Pending) Attributes() []attribute.KeyValue {
	<-p.done
	return p.info.Attributes()
}
