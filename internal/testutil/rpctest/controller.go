// Package rpctest drives a process that speaks Pi's RPC protocol (Pi
// itself, or pi-otel rpc in front of it) the way an editor would: it writes
// commands to its stdin, reads records from its stdout, waits for records
// and keeps the full transcript of both directions in the order this
// controller saw them.
package rpctest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// Dir is the direction of one transcript line.
type Dir string

const (
	// In is a line the controller wrote to the peer's stdin.
	In Dir = ">"
	// Out is a line the peer wrote to its stdout.
	Out Dir = "<"
)

// Line is one transcript entry. Raw is the line without its LF, exactly as
// written or read (a CR before the LF is kept).
type Line struct {
	Dir Dir
	At  time.Time
	Raw []byte
	// Rec is Raw decoded as a JSON object, nil when it is not one.
	Rec map[string]any
}

// Type is the record's "type" field, or "".
func (l Line) Type() string { s, _ := l.Rec["type"].(string); return s }

// Str is a top-level string field of the record, or "".
func (l Line) Str(key string) string { s, _ := l.Rec[key].(string); return s }

// Controller is one running peer.
type Controller struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu       sync.Mutex
	lines    []Line
	sent     bytes.Buffer // every byte written, in order
	received bytes.Buffer // every byte read, in order
	outs     int          // Out lines seen so far
	closed   bool
	readErr  error
	wake     chan struct{}
	done     chan struct{}
}

// Start starts cmd with pipes on its stdin and stdout. The caller sets
// cmd's environment, directory and stderr.
func Start(cmd *exec.Cmd) (*Controller, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Controller{cmd: cmd, stdin: stdin, wake: make(chan struct{}), done: make(chan struct{})}
	go c.read(stdout)
	return c, nil
}

func (c *Controller) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			c.mu.Lock()
			c.received.Write(b)
			c.mu.Unlock()
			raw := bytes.TrimSuffix(b, []byte{'\n'})
			c.add(Line{Dir: Out, At: time.Now(), Raw: append([]byte(nil), raw...), Rec: decode(raw)})
		}
		if err != nil {
			c.mu.Lock()
			if err != io.EOF {
				c.readErr = err
			}
			c.closed = true
			c.signal()
			c.mu.Unlock()
			close(c.done)
			return
		}
	}
}

func decode(raw []byte) map[string]any {
	var m map[string]any
	if json.Unmarshal(bytes.TrimSuffix(raw, []byte{'\r'}), &m) != nil {
		return nil
	}
	return m
}

func (c *Controller) add(l Line) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, l)
	if l.Dir == Out {
		c.outs++
	}
	c.signal()
}

// signal wakes every waiter; c.mu is held.
func (c *Controller) signal() {
	close(c.wake)
	c.wake = make(chan struct{})
}

// Send writes line and an LF.
func (c *Controller) Send(line string) error { return c.SendRaw([]byte(line + "\n")) }

// SendRaw writes b as is; each LF-terminated line in it (and an
// unterminated tail) is recorded in the transcript.
func (c *Controller) SendRaw(b []byte) error {
	at := time.Now()
	rest := b
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		var raw []byte
		if i < 0 {
			raw, rest = rest, nil
		} else {
			raw, rest = rest[:i], rest[i+1:]
		}
		c.add(Line{Dir: In, At: at, Raw: append([]byte(nil), raw...), Rec: decode(raw)})
	}
	c.mu.Lock()
	c.sent.Write(b)
	c.mu.Unlock()
	_, err := c.stdin.Write(b)
	return err
}

// CloseStdin gives the peer EOF on its stdin.
func (c *Controller) CloseStdin() error { return c.stdin.Close() }

// Cursor marks a position in the peer's output, so that a wait only looks
// at records that arrived after it.
type Cursor int

// Mark is the current end of the peer's output.
func (c *Controller) Mark() Cursor {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Cursor(c.outs)
}

// ErrEOF is returned by Wait when the peer's stdout ended first.
var ErrEOF = errors.New("rpctest: peer closed stdout before the record came")

// WaitAfter waits until an output record after cur satisfies match, and
// returns it with the cursor just past it. It gives up after timeout.
func (c *Controller) WaitAfter(cur Cursor, timeout time.Duration, match func(Line) bool) (Line, Cursor, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		n := 0
		for _, l := range c.lines {
			if l.Dir != Out {
				continue
			}
			n++
			if n > int(cur) && match(l) {
				c.mu.Unlock()
				return l, Cursor(n), nil
			}
		}
		closed, wake := c.closed, c.wake
		c.mu.Unlock()
		if closed {
			return Line{}, cur, ErrEOF
		}
		select {
		case <-wake:
		case <-deadline.C:
			return Line{}, cur, fmt.Errorf("rpctest: no matching record within %v", timeout)
		}
	}
}

// WaitExit waits for the peer's stdout to end and the process to exit, and
// returns its exit code (-1 when a signal killed it).
func (c *Controller) WaitExit(timeout time.Duration) (int, error) {
	select {
	case <-c.done:
	case <-time.After(timeout):
		return 0, fmt.Errorf("rpctest: peer still running after %v", timeout)
	}
	err := c.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return 0, err
	}
	return c.cmd.ProcessState.ExitCode(), nil
}

// Cmd is the running peer.
func (c *Controller) Cmd() *exec.Cmd { return c.cmd }

// Sent is every byte written to the peer so far.
func (c *Controller) Sent() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.sent.Bytes())
}

// Received is every byte the peer wrote so far.
func (c *Controller) Received() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.received.Bytes())
}

// Lines returns a copy of the transcript so far.
func (c *Controller) Lines() []Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Line(nil), c.lines...)
}

// Match helpers.

// IsType matches records of type typ.
func IsType(typ string) func(Line) bool {
	return func(l Line) bool { return l.Type() == typ }
}

// IsResponse matches the response to command (any id).
func IsResponse(command string) func(Line) bool {
	return func(l Line) bool { return l.Type() == "response" && l.Str("command") == command }
}

// IsResponseID matches the response carrying id.
func IsResponseID(id string) func(Line) bool {
	return func(l Line) bool { return l.Type() == "response" && l.Str("id") == id }
}
