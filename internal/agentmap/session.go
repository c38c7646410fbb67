package agentmap

import (
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// The seams below serve a session file's translation (internal/session),
// which knows facts no stream record carries.

// Project names the project by the last element of cwd, POSIX or
// Windows: a dimension for cost per project that leaks no full path.
func Project(cwd string) string {
	cwd = strings.TrimRight(cwd, `/\`)
	if i := strings.LastIndexAny(cwd, `/\`); i >= 0 {
		cwd = cwd[i+1:]
	}
	return cwd
}

// AddUsage counts usage that no chat or compaction span carries (a
// session file's usage and branch_summary entries) into the open run's
// token and cost totals. With no run open it is counted as an anomaly.
func (m *Mapper) AddUsage(u *event.Usage, at time.Time) {
	if m.run == nil {
		m.anomaly("usage with no run open")
		return
	}
	m.run.usage.Add(u)
}

// FailTool ends the open tool call id in error at at, with errorType and
// reason: a call whose result never came (Pi killed mid-tool, seen in a
// session file). It reports whether the call was open.
func (m *Mapper) FailTool(id, errorType, reason string, at time.Time) bool {
	r := m.run
	if r == nil {
		return false
	}
	t := r.tools.get(id)
	if t == nil {
		return false
	}
	r.toolErrors++
	t.SetStatus(codes.Error, reason)
	m.endTool(t, at, semconv.ErrorTypeKey.String(errorType), vocab.UnfinishedKey.Bool(true))
	return true
}
