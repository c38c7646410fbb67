package proc

import "testing"

// Promtool is the path of Prometheus's promtool, which the dashboards' and
// the operator suites check their rules and configs with.
func Promtool(tb testing.TB) string {
	tb.Helper()
	return Tool(tb, "promtool", "Debian package prometheus")
}
