package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// WriteJSON writes t as {"rows": [...], "total": {...}}.
func WriteJSON(w io.Writer, t Table) error {
	rows := t.Rows
	if rows == nil {
		rows = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Rows  []Row  `json:"rows"`
		Total Totals `json:"total"`
	}{rows, t.Total})
}

// columns are the numbers' headings, as the JSON names them.
var columns = []string{"input", "output", "cacheRead", "cacheWrite", "cost", "runs", "errors"}

// WriteCSV writes t with a header, the grouping's name first, and no
// totals row: a spreadsheet sums the rows itself.
func WriteCSV(w io.Writer, t Table) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(append([]string{string(t.By)}, columns...))
	for _, r := range t.Rows {
		_ = cw.Write(append([]string{r.Key}, plain(r.Totals)...))
	}
	cw.Flush()
	return cw.Error()
}

func plain(t Totals) []string {
	return []string{
		strconv.FormatInt(t.Input, 10), strconv.FormatInt(t.Output, 10),
		strconv.FormatInt(t.CacheRead, 10), strconv.FormatInt(t.CacheWrite, 10),
		strconv.FormatFloat(t.Cost, 'f', -1, 64),
		strconv.FormatInt(t.Runs, 10), strconv.FormatInt(t.Errors, 10),
	}
}

// headings are the table's column titles.
var headings = []string{"input", "output", "cache read", "cache write", "cost", "runs", "errors"}

// minKey is the narrowest the key column is cut to.
const minKey = 8

// WriteTable writes t as a table of at most width columns where it can:
// numbers grouped by thousands, then, if that is too wide, in k, M and
// B; then the key column cut, with an ellipsis, down to minKey.
func WriteTable(w io.Writer, t Table, width int) error {
	cells := func(compact bool) [][]string {
		out := [][]string{append([]string{string(t.By)}, headings...)}
		for _, r := range t.Rows {
			out = append(out, append([]string{r.Key}, human(r.Totals, compact)...))
		}
		return append(out, append([]string{"total"}, human(t.Total, compact)...))
	}
	grid := cells(false)
	if tableWidth(grid) > width {
		grid = cells(true)
	}
	if over := tableWidth(grid) - width; over > 0 {
		keyW := colWidth(grid, 0)
		cut := max(minKey, keyW-over)
		for _, row := range grid {
			row[0] = elide(row[0], cut)
		}
	}
	var b strings.Builder
	widths := make([]int, len(grid[0]))
	for i := range widths {
		widths[i] = colWidth(grid, i)
	}
	rule := func() {
		n := 0
		for _, w := range widths {
			n += w
		}
		b.WriteString(strings.Repeat("─", n+2*(len(widths)-1)))
		b.WriteByte('\n')
	}
	for i, row := range grid {
		if i == len(grid)-1 {
			rule()
		}
		for j, c := range row {
			pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c))
			switch {
			case j == 0:
				b.WriteString(c + pad)
			default:
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteByte('\n')
		if i == 0 {
			rule()
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func tableWidth(grid [][]string) int {
	n := 0
	for i := range grid[0] {
		n += colWidth(grid, i)
	}
	return n + 2*(len(grid[0])-1)
}

func colWidth(grid [][]string, i int) int {
	n := 0
	for _, row := range grid {
		n = max(n, utf8.RuneCountInString(row[i]))
	}
	return n
}

// elide cuts s to n runes, the last of them an ellipsis.
func elide(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func human(t Totals, compact bool) []string {
	n := grouped
	if compact {
		n = short
	}
	return []string{n(t.Input), n(t.Output), n(t.CacheRead), n(t.CacheWrite), dollars(t.Cost), grouped(t.Runs), grouped(t.Errors)}
}

// grouped writes n with thousands separators: 1,234,567.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// short writes n in at most about five characters: 987, 12.3k, 4.56M.
func short(n int64) string {
	v := float64(n)
	for _, u := range []struct {
		size float64
		name string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= u.size || -v >= u.size {
			x := v / u.size
			switch {
			case x >= 100 || x <= -100:
				return fmt.Sprintf("%.0f%s", x, u.name)
			case x >= 10 || x <= -10:
				return fmt.Sprintf("%.1f%s", x, u.name)
			}
			return fmt.Sprintf("%.2f%s", x, u.name)
		}
	}
	return strconv.FormatInt(n, 10)
}

// dollars writes a cost in cents, and tiny ones to a hundredth of a
// cent, so that a cheap model's work does not read as nothing.
func dollars(v float64) string {
	if v != 0 && v < 0.005 && v > -0.005 {
		return "$" + strconv.FormatFloat(v, 'f', 4, 64)
	}
	cents := int64(math.Round(v * 100))
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s$%s.%02d", sign, grouped(cents/100), cents%100)
}
