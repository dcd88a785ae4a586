// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

// Package otelperf annotates OpenTelemetry spans with what they cost their
// goroutine's thread, with libspanperf (package spanperf).  It is a package
// of its own so that the core package needs nothing but the standard library.
package otelperf

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"spanperf"
)

// EventsKey is the span attribute that chooses a span's events, as
// perfevents' tag does: trace.WithAttributes(attribute.String("perfevents",
// "cpu-cycles,cache-misses")) at Start.
const EventsKey = attribute.Key("perfevents")

// SpanProcessor annotates each span with what it cost its goroutine's
// thread: the counters are read at start and at end, and the deltas become
// span attributes named as spanperf names them (perf.task_clock_ms,
// perf.context_switches, perf.page_faults; perf.unavailable lists the events
// this machine could not count).  While a span runs, its goroutine is locked
// to its OS thread and the span is that thread's OpenTelemetry thread context
// (OTEP 4947), so `spanperf record --otel` sees it with its ids, its parent
// and, at its end, its counts.
//
// The SDK's SpanProcessor sees spans read-only at their end, so this one
// wraps the processor that exports them (a batch or simple processor):
//
//	sdktrace.WithSpanProcessor(otelperf.NewSpanProcessor(sdktrace.NewBatchSpanProcessor(exp)))
//
// End a span on the goroutine that started it (defer span.End()): a span
// ended elsewhere goes on without counter attributes, and the goroutine that
// started it stays locked to its thread until it exits.
type SpanProcessor struct {
	next   sdktrace.SpanProcessor
	events string
}

var _ sdktrace.SpanProcessor = (*SpanProcessor)(nil)

// Option configures NewSpanProcessor.
type Option func(*SpanProcessor)

// WithEvents counts events (comma separated, the names `spanperf stat -e`
// takes) in spans that do not choose their own with the perfevents attribute.
func WithEvents(events string) Option { return func(p *SpanProcessor) { p.events = events } }

// NewSpanProcessor wraps next, which receives every span with the counter attributes added.
func NewSpanProcessor(next sdktrace.SpanProcessor, opts ...Option) *SpanProcessor {
	p := &SpanProcessor{next: next}
	for _, o := range opts {
		o(p)
	}
	return p
}

// OnStart begins the library's span with the SDK's ids (locking the goroutine to its thread).
func (p *SpanProcessor) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	sc := s.SpanContext()
	events := p.events
	for _, kv := range s.Attributes() {
		if kv.Key == EventsKey {
			events = kv.Value.AsString()
		}
	}
	spanperf.BeginWithIDs(s.Name(), events, sc.TraceID(), sc.SpanID(), byte(sc.TraceFlags()))
	p.next.OnStart(parent, s)
}

// counted is the ended span with the counter attributes after its own.
type counted struct {
	sdktrace.ReadOnlySpan
	extra []attribute.KeyValue
}

func (c counted) Attributes() []attribute.KeyValue {
	a := c.ReadOnlySpan.Attributes()
	out := make([]attribute.KeyValue, 0, len(a)+len(c.extra))
	return append(append(out, a...), c.extra...)
}

// OnEnd ends the library's span, if it is this thread's innermost, and hands next the span with its counts.
func (p *SpanProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if out := spanperf.EndWithID(s.SpanContext().SpanID()); out != nil {
		extra := make([]attribute.KeyValue, 0, len(out.Events)+1)
		for i, ev := range out.Events {
			k, clock := spanperf.AttrKey(ev)
			if clock {
				extra = append(extra, attribute.Float64(k, float64(out.Deltas[i])/1e6))
			} else {
				extra = append(extra, attribute.Int64(k, int64(out.Deltas[i])))
			}
		}
		if u := out.UnavailableList(); u != "" {
			extra = append(extra, attribute.String("perf.unavailable", u))
		}
		s = counted{s, extra}
	}
	p.next.OnEnd(s)
}

// Shutdown shuts next down.
func (p *SpanProcessor) Shutdown(ctx context.Context) error { return p.next.Shutdown(ctx) }

// ForceFlush flushes next.
func (p *SpanProcessor) ForceFlush(ctx context.Context) error { return p.next.ForceFlush(ctx) }
