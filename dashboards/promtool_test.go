//go:build realstack

package dashboards_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/proc"
)

// TestPromQLPassesPromtool checks every expression with promtool: the rule files as they are,
// and the dashboard queries written into a temporary rule file.
func TestPromQLPassesPromtool(t *testing.T) {
	tool := proc.Promtool(t)
	args := append([]string{"check", "rules"}, ruleFiles(t)...)
	if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}

	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard-queries\n    rules:\n")
	qs := allQueries(t)
	for i, q := range qs {
		expr, _ := json.Marshal(q.Expr) // a JSON string is a valid YAML scalar
		fmt.Fprintf(&b, "      - record: dashboard_query_%d\n        expr: %s\n", i, expr)
	}
	tmp := filepath.Join(t.TempDir(), "queries.yml")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "check", "rules", tmp).CombinedOutput(); err != nil {
		t.Errorf("promtool rejected a query: %v\n%s", err, out)
		for i, q := range qs {
			if strings.Contains(string(out), fmt.Sprintf("dashboard_query_%d\"", i)) {
				t.Errorf("  %s: %s", q.Source, q.Raw)
			}
		}
	}

	// The same check must fail on a broken expression, or it proves nothing.
	broken := filepath.Join(t.TempDir(), "broken.yml")
	os.WriteFile(broken, []byte("groups:\n  - name: g\n    rules:\n      - record: r\n        expr: sum by (a (x)\n"), 0o644)
	if err := exec.Command(tool, "check", "rules", broken).Run(); err == nil {
		t.Error("promtool accepted a broken expression")
	}
}

func TestAlertRulesUnitTests(t *testing.T) {
	cmd := exec.Command(proc.Promtool(t), "test", "rules", "alerts.test.yml")
	cmd.Dir = filepath.Join(dir(t), "alerts")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}
