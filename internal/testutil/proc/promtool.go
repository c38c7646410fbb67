package proc

import "testing"

// Promtool is the path of Prometheus's promtool, which the dashboards'
// suite checks the alert rules and dashboard queries with.
func Promtool(tb testing.TB) string {
	tb.Helper()
	return Tool(tb, "promtool", "Debian package prometheus")
}
