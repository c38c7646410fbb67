//go:build unix

package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
)

var errNoCommand = errors.New("no command given")

// StartError reports a child that could not be started.
type StartError struct {
	Name string // the command as given (argv[0])
	Err  error
}

func (e *StartError) Error() string {
	if e.Name == "" {
		return "launch: " + e.Err.Error()
	}
	return fmt.Sprintf("launch: cannot run %s: %v", strconv.Quote(e.Name), e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// startError builds the error for a command that could not be run,
// dropping the wrappers that would repeat its name or say "fork/exec".
func startError(name, path string, err error) *StartError {
	if e, ok := errors.AsType[*exec.Error](err); ok {
		err = e.Err
	} else if e, ok := errors.AsType[*fs.PathError](err); ok {
		err = e.Err
	}
	// The file is there, so what is missing is its #! interpreter.
	if errors.Is(err, fs.ErrNotExist) && path != "" {
		if _, serr := os.Stat(path); serr == nil {
			err = fmt.Errorf("bad interpreter: %w", err)
		}
	}
	return &StartError{Name: name, Err: err}
}

// ExitCodeForStartError is the status a shell exits with when it cannot run
// a command: 127 when it was not found (nor, for a script, its interpreter),
// 126 when it was found but could not be run (no permission, a directory,
// not an executable format, or any other failure). It is 0 for a nil error.
func ExitCodeForStartError(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist), errors.Is(err, errNoCommand):
		return 127
	default:
		return 126
	}
}
