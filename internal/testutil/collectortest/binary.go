// Package collectortest starts real OpenTelemetry Collector processes from the shipped
// configuration files, bound to loopback, for tests: the project's own distribution
// (pi-otel-collector, $PI_OTEL_COLLECTOR) as agent and gateways, with Jaeger v2
// (internal/testutil/jaegertest) as the trace backends.
package collectortest

import (
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/proc"
)

// CollectorEnv names pi-otel-collector, built from collector/builder-config.yaml by
// scripts/deps.sh.
const CollectorEnv = "PI_OTEL_COLLECTOR"

// Binary returns $PI_OTEL_COLLECTOR, failing t when it is missing.
func Binary(t testing.TB) string {
	t.Helper()
	return proc.EnvBinary(t, CollectorEnv)
}
