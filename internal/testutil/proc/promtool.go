package proc

import "testing"

// Promtool is the path of Prometheus's promtool, which the dashboards'
// suite checks rules and queries with and the operator suite checks the
// compose stack's Prometheus config with.
func Promtool(tb testing.TB) string {
	tb.Helper()
	return Tool(tb, "promtool", "Debian package prometheus")
}
