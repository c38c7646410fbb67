package app

import (
	"slices"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/who"
)

// telemetryConfig maps the command line's settings onto the telemetry
// pipeline's own Config; content capture and the rest stay here.
func telemetryConfig(c config.Config) telemetry.Config {
	return telemetry.Config{
		ServiceName:        c.ServiceName,
		ServiceVersion:     Version,
		ResourceAttributes: append(slices.Clip(c.ResourceAttributes), who.PseudoAttribute(c.User, c.UserPseudonymKey)...),
		Traces:             c.Traces,
		Metrics:            c.Metrics,
		Logs:               c.Logs,
		Batch:              c.Batch,
		MetricsInterval:    c.MetricsInterval,
		Temporality:        c.Temporality,
		FlushTimeout:       c.FlushTimeout,
		Quiet:              c.Quiet,
		NoColor:            c.NoColor,
		Redact:             c.Redact,

		AttributeValueLengthLimit: c.AttributeValueLengthLimit,
		Spool:                     c.Spool,
	}
}
