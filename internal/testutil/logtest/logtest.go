// Package logtest keeps the log records a LoggerProvider exports in
// memory, for tests of what pi-otel logs.
package logtest

import (
	"context"
	"sync"

	sdklog "go.opentelemetry.io/otel/sdk/log"
)

// Memory is an sdklog.Exporter that keeps a copy of every record it is
// sent (the SDK reuses a record's storage after Export returns).
type Memory struct {
	mu      sync.Mutex
	records []sdklog.Record
}

var _ sdklog.Exporter = (*Memory)(nil)

// Export keeps a clone of each record.
func (m *Memory) Export(_ context.Context, rs []sdklog.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rs {
		m.records = append(m.records, r.Clone())
	}
	return nil
}

// Shutdown does nothing.
func (m *Memory) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing: records are kept as they are exported.
func (m *Memory) ForceFlush(context.Context) error { return nil }

// Records returns the records kept so far, in the order they came.
func (m *Memory) Records() []sdklog.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.records[:len(m.records):len(m.records)]
}

// NewProvider returns a LoggerProvider that exports each record to m as
// it is emitted.
func NewProvider(m *Memory, opts ...sdklog.LoggerProviderOption) *sdklog.LoggerProvider {
	return sdklog.NewLoggerProvider(append([]sdklog.LoggerProviderOption{sdklog.WithProcessor(sdklog.NewSimpleProcessor(m))}, opts...)...)
}
