// Package configtest gives tests pi-otel's configuration to start from.
package configtest

import "github.com/pi-otel/pi-otel/internal/config"

// Default is the configuration when nothing is set: what config.Load
// reads from no flags and no environment.
func Default() config.Config {
	cfg, _ := config.Load(nil, nil)
	return cfg
}
