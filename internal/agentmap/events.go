package agentmap

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// ExtensionError records an extension_error on the innermost open span.
func (m *Mapper) ExtensionError(ev *event.Event, at time.Time) {
	attrs := []attribute.KeyValue{
		vocab.ExtensionPathKey.String(ev.ExtensionPath),
		vocab.ExtensionEventKey.String(shortName(ev.Event)),
	}
	if c := m.cfg.content; c != nil {
		attrs = append(attrs, vocab.ExtensionErrorKey.String(c.Scrub(ev.Error)))
	}
	if m.run != nil {
		m.run.extensionErrors++
	}
	m.currentEvent(vocab.EventExtensionError, at, attrs...)
}

func (m *Mapper) rootEvent(name string, at time.Time, attrs ...attribute.KeyValue) {
	if s := m.eventSpan(name, true); s != nil {
		s.AddEvent(name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	}
}

func (m *Mapper) currentEvent(name string, at time.Time, attrs ...attribute.KeyValue) {
	if s := m.eventSpan(name, false); s != nil {
		s.AddEvent(name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	}
}

// eventSpan is the span an event goes on: the root, or else the innermost
// open span. It is nil when that span does not record, and when no run is
// open, which is counted.
func (m *Mapper) eventSpan(name string, root bool) *span {
	if m.run == nil {
		m.stats.Anomalies["idle "+name]++
		return nil
	}
	s := &m.run.root
	if !root {
		s = m.run.innermost()
	}
	if !s.rec {
		return nil
	}
	return s
}
