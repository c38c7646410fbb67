package app

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/vcs"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// teamOnSpans puts the team on every span, where the cost and token
// metrics find it as a label; the resource carries it to every signal.
func teamOnSpans(cfg config.Config) []telemetry.Option {
	if cfg.Team == "" {
		return nil
	}
	team := []attribute.KeyValue{vocab.TeamKey.String(cfg.Team)}
	return []telemetry.Option{telemetry.WithSpanAttributes(func() []attribute.KeyValue { return team })}
}

// liveFacts are the options of a live run of argv in dir: the repository
// on its spans and the version of the Pi it runs on the resource.
func liveFacts(argv []string, dir string) []telemetry.Option {
	// What git says about the work tree dir is in is read beside Pi: it
	// is started before Pi and waited for at the first span, which comes
	// after Pi's own start-up; the read is bounded, so a slow or absent
	// git costs at most vcs.DefaultTimeout there and nothing to Pi.
	opts := []telemetry.Option{telemetry.WithSpanAttributes(vcs.Start(context.Background(), dir).Attributes)}
	if v := piVersion(argv[0]); v != "" {
		opts = append(opts, telemetry.WithResource(resource.NewSchemaless(vocab.PiVersionKey.String(v))))
	}
	return opts
}
