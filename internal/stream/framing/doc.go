// Package framing splits Pi's stdout byte stream into JSONL records.
//
// The rules follow Pi's wire contract and what the real binary emits:
//
//   - Records end only at LF (0x0A); one CR immediately before the LF is
//     stripped. A lone CR anywhere else is record content.
//   - U+2028 and U+2029 appear raw inside JSON strings and are ordinary bytes
//     here. Nothing in this package is Unicode line aware.
//   - There is no length limit unless a [Reader] is given one
//     ([WithMaxRecord]); a record may be larger than any read buffer.
//   - End of input ends the last line exactly as an LF would, so an
//     unterminated tail is still a record (and loses one trailing CR, as a
//     CRLF stream cut between CR and LF would otherwise leave a stray CR).
//     A tail ([NewReaderAt]) leaves it for a later read instead.
//   - Empty lines (nothing left after stripping the CR) are not records: a
//     consumer would only have to skip them. They are counted in
//     [Stats.EmptyLines] so they are not lost silently. A tail hands them
//     out, so that its records' offsets cover every line.
//   - Bytes are not validated. Invalid JSON and invalid UTF-8 pass through
//     unchanged; judging them is the decoder's job.
//
// Records are handed out as slices into internal buffers, without copying
// when a record lies within one read. A record that spans reads is kept in
// pieces and copied once, when its end arrives, so a huge record costs about
// twice its size (a tail's, its size: see [NewReaderAt]). A caller that
// keeps a record past the documented lifetime must copy it.
package framing
