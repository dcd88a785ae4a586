// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

package otelperf

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"spanperf/internal/workload"
)

// show prints attributes as their values, not the Value struct.
func show(m map[attribute.Key]attribute.Value) string {
	out := ""
	for k, v := range m {
		out += fmt.Sprintf(" %s=%s", k, v.Emit())
	}
	return out
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// Spans made by the real SDK come out with counter attributes that match what the work measured of itself.
func TestSpanProcessorWithTheSDK(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(NewSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp))))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("spanperf-test")

	var spinCPU time.Duration
	ctx, outer := tr.Start(context.Background(), "outer")
	_, inner := tr.Start(ctx, "inner")
	spinCPU = workload.Spin(50 * time.Millisecond)
	workload.Touch(t, 300)
	inner.End()
	_, sl := tr.Start(ctx, "sleeper")
	sw := workload.Sleeps(10)
	sl.End()
	outer.End()

	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans exported", len(spans))
	}
	by := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		by[s.Name] = s
	}
	in, o, s := attrs(by["inner"]), attrs(by["outer"]), attrs(by["sleeper"])
	t.Logf("inner:%s\nsleeper:%s\nouter:%s", show(in), show(s), show(o))
	tc := in["perf.task_clock_ms"].AsFloat64()
	if tc < 0.98*float64(spinCPU)/1e6 || tc > 1.2*float64(spinCPU)/1e6+5 {
		t.Errorf("inner: perf.task_clock_ms %.3f for %.3f ms of thread CPU", tc, float64(spinCPU)/1e6)
	}
	if pf := in["perf.page_faults"].AsInt64(); pf < 300 || pf > 316 {
		t.Errorf("inner: perf.page_faults %d for 300 fresh pages", pf)
	}
	if cs := s["perf.context_switches"].AsInt64(); cs < 10 || cs < sw || cs > sw+2 {
		t.Errorf("sleeper: perf.context_switches %d for 10 sleeps (the thread's own count: %d)", cs, sw)
	}
	// Nested spans add up.
	for _, k := range []attribute.Key{"perf.page_faults", "perf.context_switches"} {
		if o[k].AsInt64() < in[k].AsInt64()+s[k].AsInt64() {
			t.Errorf("outer %s %d < inner %d + sleeper %d", k, o[k].AsInt64(), in[k].AsInt64(), s[k].AsInt64())
		}
	}
	if o["perf.task_clock_ms"].AsFloat64() < tc {
		t.Errorf("outer task-clock below inner's")
	}
	if by["inner"].Parent.SpanID() != by["outer"].SpanContext.SpanID() {
		t.Errorf("inner's parent is not outer")
	}
}

// A span ended on another goroutine passes through without counters, and the rest still works.
func TestSpanEndedElsewhere(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(NewSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp))))
	tr := tp.Tracer("spanperf-test")
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		_, s := tr.Start(context.Background(), "handed-off")
		close(started)
		<-done
		_ = s
	}()
	<-started
	close(done)
	_, s := tr.Start(context.Background(), "normal")
	s.End()
	spans := exp.GetSpans()
	if len(spans) != 1 || attrs(spans[0])["perf.task_clock_ms"].Type() != attribute.FLOAT64 {
		t.Fatalf("normal span after a hand-off: %v", spans)
	}
}

func noopProvider(with bool) *sdktrace.TracerProvider {
	var p sdktrace.SpanProcessor = sdktrace.NewSimpleSpanProcessor(tracetest.NewNoopExporter())
	if with {
		p = NewSpanProcessor(p)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
}

func benchSpans(b *testing.B, with bool) {
	tr := noopProvider(with).Tracer("bench")
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, s := tr.Start(ctx, "bench")
		s.End()
	}
}

// The SDK's own cost per span (simple processor, no-op exporter).
func BenchmarkSDKSpan(b *testing.B) { benchSpans(b, false) }

// The same with the spanperf processor: the difference is what it adds.
func BenchmarkSDKSpanWithSpanperf(b *testing.B) { benchSpans(b, true) }

// perfevents' per-span tag, as an attribute: the span counts its own events and says which it could not.
func TestPerfeventsAttribute(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(NewSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp), WithEvents("task-clock"))))
	tr := tp.Tracer("spanperf-test")
	_, s := tr.Start(context.Background(), "tagged", trace.WithAttributes(attribute.String("perfevents", "cpu-cycles,cache-misses,page-faults")))
	workload.Touch(t, 50)
	s.End()
	_, d := tr.Start(context.Background(), "default")
	d.End()
	spans := exp.GetSpans()
	a, b := attrs(spans[0]), attrs(spans[1])
	t.Logf("tagged:%s\ndefault:%s", show(a), show(b))
	if pf := a["perf.page_faults"].AsInt64(); pf < 50 {
		t.Errorf("tagged: perf.page_faults %d for 50 pages", pf)
	}
	if _, err := os.Stat("/sys/bus/event_source/devices/cpu"); err != nil && a["perf.unavailable"].AsString() != "cpu-cycles,cache-misses" {
		t.Errorf("tagged: perf.unavailable %q", a["perf.unavailable"].AsString())
	}
	if _, ok := b["perf.task_clock_ms"]; !ok || len(b) != 1 {
		t.Errorf("WithEvents(task-clock): %s", show(b))
	}
}
