// Package metricstest emits span trees shaped like the mapper's (docs/span-model.md) with
// controlled attributes and virtual timestamps, for tests of the metrics and the Collector
// pipeline that must not depend on the mapper's progress.
package metricstest

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Run is one agent invocation: the root span and what happened inside it.
type Run struct {
	Outcome     string // pi.outcome: ok, error, aborted, unsettled
	Provider    string
	Model       string
	Turns       []Turn
	Retries     []string // pi.retry.outcome of each retry span
	Compactions []Compaction
	RPC         []RPC
	Dialogs     []Dialog
	Start       time.Time // zero means now
}

// Turn is one pi.turn with its chat call and tool executions.
type Turn struct {
	Chat  Chat
	Tools []Tool
}

// Chat is one `chat {model}` span.
type Chat struct {
	InputTokens, OutputTokens int64
	Cost                      float64
	TimeToFirstChunk          time.Duration // 0: attribute absent
	Duration                  time.Duration
	ErrorType                 string // non-empty: the call failed
}

// Tool is one `execute_tool {name}` span.
type Tool struct {
	Name     string
	Error    bool
	Duration time.Duration
}

// Compaction is one pi.compaction span.
type Compaction struct{ Reason, Outcome string }

// RPC is one `pi.rpc {command}` span.
type RPC struct {
	Command string
	Success bool
}

// Dialog is one `pi.extension_ui {method}` span.
type Dialog struct {
	Method, Outcome string
	Wait            time.Duration
}

// Emit creates and ends the spans of r on tracer and returns the root's span context.
// Timestamps are virtual, so durations are exactly the ones r asks for.
func Emit(ctx context.Context, tracer trace.Tracer, r Run) trace.SpanContext {
	now := r.Start
	if now.IsZero() {
		now = time.Now()
	}
	tick := func(d time.Duration) time.Time { now = now.Add(d); return now }

	ctx, root := tracer.Start(ctx, vocab.SpanRoot, trace.WithTimestamp(now), trace.WithAttributes(
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(vocab.AgentName),
		semconv.GenAIProviderNameKey.String(r.Provider),
		semconv.GenAIRequestModel(r.Model),
	))
	runCtx, run := tracer.Start(ctx, vocab.SpanAgentRun, trace.WithTimestamp(tick(time.Millisecond)),
		trace.WithAttributes(vocab.AgentRunIndexKey.Int(0)))
	for i, tu := range r.Turns {
		turnCtx, turn := tracer.Start(runCtx, vocab.SpanTurn, trace.WithTimestamp(tick(time.Millisecond)),
			trace.WithAttributes(vocab.TurnIndexKey.Int(i), vocab.TurnToolCallsKey.Int(len(tu.Tools))))
		c := tu.Chat
		attrs := []attribute.KeyValue{
			semconv.GenAIOperationNameChat,
			semconv.GenAIProviderNameKey.String(r.Provider),
			semconv.GenAIRequestModel(r.Model),
			semconv.GenAIUsageInputTokensKey.Int64(c.InputTokens),
			semconv.GenAIUsageOutputTokensKey.Int64(c.OutputTokens),
			vocab.CostTotalKey.Float64(c.Cost),
			vocab.DurationMsKey.Int64(c.Duration.Milliseconds()),
		}
		if c.TimeToFirstChunk > 0 {
			attrs = append(attrs, semconv.GenAIResponseTimeToFirstChunk(c.TimeToFirstChunk.Seconds()))
		}
		if c.ErrorType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(c.ErrorType))
		}
		_, chat := tracer.Start(turnCtx, vocab.SpanChat.Name(r.Model), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(tick(time.Millisecond)), trace.WithAttributes(attrs...))
		if c.ErrorType != "" {
			chat.SetStatus(codes.Error, c.ErrorType)
		}
		chat.End(trace.WithTimestamp(tick(c.Duration)))
		for j, tl := range tu.Tools {
			_, tool := tracer.Start(turnCtx, vocab.SpanTool.Name(tl.Name), trace.WithTimestamp(tick(time.Millisecond)),
				trace.WithAttributes(
					semconv.GenAIOperationNameExecuteTool,
					semconv.GenAIToolName(tl.Name),
					semconv.GenAIToolCallID(fmt.Sprintf("call_%d_%d", i, j)),
					semconv.GenAIToolTypeKey.String(vocab.ToolTypeFunction),
					vocab.ToolDurationMsKey.Int64(tl.Duration.Milliseconds()),
				))
			if tl.Error {
				tool.SetAttributes(semconv.ErrorTypeKey.String(vocab.ToolErrorType))
				tool.SetStatus(codes.Error, "tool_error")
			}
			tool.End(trace.WithTimestamp(tick(tl.Duration)))
		}
		if c.ErrorType != "" {
			turn.SetStatus(codes.Error, c.ErrorType)
		}
		turn.End(trace.WithTimestamp(tick(time.Millisecond)))
	}
	for _, co := range r.Compactions {
		_, sp := tracer.Start(runCtx, vocab.SpanCompaction, trace.WithTimestamp(tick(time.Millisecond)),
			trace.WithAttributes(
				vocab.CompactionReasonKey.String(co.Reason),
				vocab.CompactionOutcomeKey.String(co.Outcome),
			))
		if co.Outcome != string(vocab.CompactionOK) {
			sp.SetStatus(codes.Error, "compaction "+co.Outcome)
		}
		sp.End(trace.WithTimestamp(tick(200 * time.Millisecond)))
	}
	run.End(trace.WithTimestamp(tick(time.Millisecond)))
	for i, outcome := range r.Retries {
		_, sp := tracer.Start(ctx, vocab.SpanRetry, trace.WithTimestamp(tick(time.Millisecond)),
			trace.WithAttributes(
				vocab.RetryAttemptKey.Int(i+1),
				vocab.RetryMaxAttemptsKey.Int(3),
				vocab.RetryOutcomeKey.String(outcome),
			))
		if outcome == string(vocab.RetryExhausted) || outcome == string(vocab.RetryUnfinished) {
			sp.SetStatus(codes.Error, "retry "+outcome)
		}
		sp.End(trace.WithTimestamp(tick(100 * time.Millisecond)))
	}
	for _, d := range r.Dialogs {
		_, sp := tracer.Start(ctx, vocab.SpanExtensionUI.Name(d.Method), trace.WithTimestamp(tick(time.Millisecond)),
			trace.WithAttributes(
				vocab.UIMethodKey.String(d.Method),
				vocab.UIOutcomeKey.String(d.Outcome),
			))
		sp.End(trace.WithTimestamp(tick(d.Wait)))
	}
	for _, c := range r.RPC {
		_, sp := tracer.Start(ctx, vocab.SpanRPC.Name(c.Command), trace.WithTimestamp(tick(time.Millisecond)),
			trace.WithAttributes(
				vocab.RPCCommandKey.String(c.Command),
				vocab.RPCSuccessKey.Bool(c.Success),
			))
		if !c.Success {
			sp.SetStatus(codes.Error, "rpc command failed")
		}
		sp.End(trace.WithTimestamp(tick(5 * time.Millisecond)))
	}
	root.SetAttributes(
		vocab.OutcomeKey.String(r.Outcome),
		vocab.SettledKey.Bool(r.Outcome != "unsettled"),
		vocab.TurnsKey.Int(len(r.Turns)),
		vocab.RetriesKey.Int(len(r.Retries)),
		vocab.CompactionsKey.Int(len(r.Compactions)),
	)
	if r.Outcome == string(vocab.OutcomeError) || r.Outcome == string(vocab.OutcomeUnsettled) {
		root.SetStatus(codes.Error, r.Outcome)
	}
	root.End(trace.WithTimestamp(tick(time.Millisecond)))
	return root.SpanContext()
}
