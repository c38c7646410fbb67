// Command library feeds a captured Pi event stream (pi --mode json) to the
// mapper and prints the spans it makes with the OpenTelemetry SDK's stdout
// exporter: the mapper as a library inside your own program.
//
//	go run ./examples/library testdata/captures/pi-1.6.0/bash-tool.jsonl
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/mapper"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: library STREAM.jsonl")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	st, err := run(context.Background(), f, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "%d records, %d runs, %d unknown, %d out of place\n",
		st.Events, st.Roots, st.Unknown, len(st.Anomalies))
}

// run maps the stream read from in, writes each span to out as JSON as
// soon as it ends, and returns what the mapper counted.
func run(ctx context.Context, in io.Reader, out io.Writer) (mapper.Stats, error) {
	exp, err := stdouttrace.New(stdouttrace.WithWriter(out))
	if err != nil {
		return mapper.Stats{}, err
	}
	// A syncer exports each span as it ends; a real program would batch.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(ctx)

	// The stream carries no time for most records: give each the next
	// millisecond, and tell the mapper the times are made up.
	m := mapper.New(tp, mapper.WithInexactTimes())
	at := time.Now()
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n') // Pi ends records with LF only
		if rec := bytes.TrimSpace(line); len(rec) > 0 {
			at = at.Add(time.Millisecond)
			// A line that is not a Pi record is skipped; its error says why.
			_ = m.Record(rec, at)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return mapper.Stats{}, err
		}
	}
	// The end of the input ends whatever is still open.
	m.Close(mapper.Ending{Reason: vocab.EndEOF}, at)
	return m.Stats(), tp.Shutdown(ctx)
}
