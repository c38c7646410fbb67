package app

import (
	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/content/render"
)

// newContent returns nil, capturing nothing, unless the user opted in. A
// nil interface, not a nil *render.Content, so that callers may test for
// nil.
func newContent(cfg config.Config) (agentmap.Content, error) {
	if !cfg.CaptureContent {
		return nil, nil
	}
	c, err := render.New(cfg.Redact, cfg.MaxContentLength)
	if err != nil {
		return nil, err
	}
	return c, nil
}
