package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
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

// keyWidth is the narrowest the key column is cut to before columns are
// left out; minKey after.
const (
	keyWidth = 16
	minKey   = 8
)

// shrinkKey cuts the key column as far as the table is too wide, to no
// less than least.
func shrinkKey(grid [][]string, width, least int) {
	if over := tableWidth(grid) - width; over > 0 {
		cut := max(least, colWidth(grid, 0)-over)
		for _, row := range grid {
			row[0] = elide(row[0], cut)
		}
	}
}

// WriteTable writes t as a table of at most width columns where it can:
// numbers grouped by thousands; if that is too wide, in k, M and B; then
// the key column cut, with an ellipsis, down to minKey; then the columns
// that matter least left out, and said so under the table.
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
	shrinkKey(grid, width, keyWidth)
	var left []string
	for _, h := range dropOrder {
		if tableWidth(grid) <= width {
			break
		}
		i := slices.Index(grid[0], h)
		for r := range grid {
			grid[r] = slices.Delete(grid[r], i, i+1)
		}
		left = append(left, h)
	}
	shrinkKey(grid, width, minKey)
	var b strings.Builder
	widths := make([]int, len(grid[0]))
	for i := range widths {
		widths[i] = colWidth(grid, i)
	}
	rule := strings.Repeat("─", tableWidth(grid)) + "\n"
	for i, row := range grid {
		if i == len(grid)-1 {
			b.WriteString(rule)
		}
		for j, c := range row {
			pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c))
			if j == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteByte('\n')
		if i == 0 {
			b.WriteString(rule)
		}
	}
	if len(left) > 0 {
		// Said within the width too, a word wrap.
		line := ""
		for _, word := range strings.Fields("not shown: " + strings.Join(left, ", ")) {
			if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
				b.WriteString(line + "\n")
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += word
		}
		b.WriteString(line + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// dropOrder is the order columns are left out of a table too wide.
var dropOrder = []string{"cache write", "errors", "cache read", "runs"}

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

// elide cuts s to n runes by its middle, an ellipsis standing for what
// is left out: session ids share their start (the time) and differ at
// their end.
func elide(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	head := (n - 1) / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
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
	s, neg := strings.CutPrefix(s, "-")
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
