package app

import (
	"math"
	"runtime/debug"
)

// defaultMemoryLimit is the soft heap limit pi-otel runs with. pi-otel sits
// beside the agent and should stay small. Without a limit the collector
// lets the heap double before it runs, so the buffers that grew for a
// multi-megabyte record, and are garbage a moment later, stay resident;
// with one it collects them as the heap nears the limit. The limit is
// soft: a record larger than it is still read whole, and the collector
// works harder only while such records go by.
const defaultMemoryLimit = 32 << 20

// applyMemoryLimit sets the soft limit unless GOMEMLIMIT, which the runtime
// has already applied, says otherwise.
func applyMemoryLimit(limit int64, getenv func(string) string) {
	if limit <= 0 || getenv == nil || getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(limit)
}

// applyMemoryFlag applies --memory-limit (PI_OTEL_MEMORY_LIMIT), which wins
// over GOMEMLIMIT and the default: 0 is unset, -1 is off.
func applyMemoryFlag(limit int64) {
	switch {
	case limit > 0:
		debug.SetMemoryLimit(limit)
	case limit < 0:
		debug.SetMemoryLimit(math.MaxInt64)
	}
}
