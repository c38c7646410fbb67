package proc

import (
	"io"
	"os/exec"
	"testing"
)

// Streams names the standard streams StartPiped connects to the test.
type Streams uint8

const (
	Stdin Streams = 1 << iota
	Stdout
	Stderr
)

// Pipes are the test's ends of a started process's piped streams; those
// not asked for are nil.
type Pipes struct {
	Stdin          io.WriteCloser
	Stdout, Stderr io.ReadCloser
}

// StartPiped starts cmd with the streams in which piped to the test,
// failing tb when it cannot. The other streams stay as cmd has them.
func StartPiped(tb testing.TB, cmd *exec.Cmd, which Streams) Pipes {
	tb.Helper()
	var p Pipes
	for _, s := range []struct {
		stream Streams
		open   func() error
	}{
		{Stdin, func() (err error) { p.Stdin, err = cmd.StdinPipe(); return err }},
		{Stdout, func() (err error) { p.Stdout, err = cmd.StdoutPipe(); return err }},
		{Stderr, func() (err error) { p.Stderr, err = cmd.StderrPipe(); return err }},
	} {
		if which&s.stream == 0 {
			continue
		}
		if err := s.open(); err != nil {
			tb.Fatal(err)
		}
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return p
}
