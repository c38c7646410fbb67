//go:build !unix

package toolctx

import (
	"errors"
	"os"
)

// Without a bash and POSIX permissions, nothing is published.
func ownedByUs(os.FileInfo) bool { return false }

func makeFifo(string) error { return errors.ErrUnsupported }

func openFifo(string) (*os.File, error) { return nil, errors.ErrUnsupported }

func openLock(string, bool) (*os.File, error) { return nil, errors.ErrUnsupported }

func createLocked(string, string) (*os.File, error) { return nil, errors.ErrUnsupported }

func writeNow(*os.File, []byte) {}
