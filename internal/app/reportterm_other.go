//go:build !unix

package app

import "os"

// windowWidth cannot tell here: $COLUMNS or the default width stand.
func windowWidth(*os.File) int { return 0 }
