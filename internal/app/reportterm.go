package app

import (
	"os"
	"strconv"
	"strings"
)

// defaultWidth is the table's width when stdout is not a terminal and
// $COLUMNS does not say.
const defaultWidth = 80

// terminalWidth is how wide report's table may be: $COLUMNS, else the
// terminal's width, else defaultWidth.
func terminalWidth(env Env) int {
	if n, err := strconv.Atoi(strings.TrimSpace(env.Getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	if f, ok := env.Stdout.(*os.File); ok && isTerminal(f) {
		if n := windowWidth(f); n > 0 {
			return n
		}
	}
	return defaultWidth
}
