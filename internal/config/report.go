package config

import (
	"flag"
)

// Report holds the settings of pi-otel report. Its dates and zone are
// read by package report, which knows what "now" and a day are.
type Report struct {
	// Warnings name environment values that were ignored (see Load).
	Warnings []string
	// By is the grouping: day, week, month, session, model, project,
	// team or skill.
	By string
	// Since, Until and TZ are as given: dates, times or durations, and
	// an IANA zone name.
	Since, Until, TZ string
	JSON, CSV        bool
	Quiet            bool
}

// reportSettings are the settings of pi-otel report alone; it shares
// --team and --quiet with the other commands.
var reportSettings = []setting{
	{flag: "by", envs: envs("PI_OTEL_REPORT_BY"), usage: "a row per `GROUPING`: day, week, month, session, model, project, team or skill", def: "day", parse: asChoice,
		choices: []string{"day", "week", "month", "session", "model", "project", "team", "skill"}},
	{flag: "since", envs: envs("PI_OTEL_REPORT_SINCE"), usage: "count the runs begun from this `TIME` on: a date (2026-12-01), a date and time (2026-12-01T15:04), or a duration back from now (24h, 7d)", defText: "all", parse: asText},
	{flag: "until", envs: envs("PI_OTEL_REPORT_UNTIL"), usage: "count the runs begun before this `TIME`, as --since takes it; a date includes its day", defText: "now", parse: asText},
	{flag: "tz", envs: envs("PI_OTEL_REPORT_TZ"), usage: "the time `ZONE` of days, weeks, months and dates, an IANA name such as Europe/Berlin, or UTC", defText: "the local zone", parse: asText},
	{flag: "json", envs: envs("PI_OTEL_REPORT_JSON"), usage: "write JSON: {\"rows\": [...], \"total\": {...}}", parse: asBool},
	{flag: "csv", envs: envs("PI_OTEL_REPORT_CSV"), usage: "write CSV with a header", parse: asBool},
}

// RegisterReportFlags defines the flags of pi-otel report on fs: its own,
// and the shared --team and --quiet. --team is read by Load, as for the
// other commands: pi.team comes from one place.
func RegisterReportFlags(fs *flag.FlagSet) {
	register(fs, reportSettings)
	register(fs, []setting{*tableRow(settings, "team"), *tableRow(settings, "quiet")})
}

// LoadReport resolves the report settings from fs (see
// RegisterReportFlags) and the environment, flag before variable before
// default.
func LoadReport(fs *flag.FlagSet, getenv func(string) string) (Report, error) {
	l := &loader{s: newSources(fs, getenv)}
	var r Report
	choice(l, &r.By, tableRow(reportSettings, "by"))
	r.Since, _, _ = l.get(tableRow(reportSettings, "since"))
	r.Until, _, _ = l.get(tableRow(reportSettings, "until"))
	r.TZ, _, _ = l.get(tableRow(reportSettings, "tz"))
	l.boolean(&r.JSON, tableRow(reportSettings, "json"))
	l.boolean(&r.CSV, tableRow(reportSettings, "csv"))
	l.boolean(&r.Quiet, tableRow(settings, "quiet"))
	if r.JSON && r.CSV {
		l.fail("--json and --csv: choose one")
	}
	return loaded(l, &r, &r.Warnings)
}
