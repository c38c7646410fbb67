//go:build !unix

package sessionwatch

import "os"

func openFile(path string) (*os.File, error) { return os.Open(path) }
