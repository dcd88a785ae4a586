// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

package otperf

import (
	"os"
	"testing"
	"time"

	basictracer "github.com/opentracing/basictracer-go"
	opentracing "github.com/opentracing/opentracing-go"

	"spanperf/internal/workload"
)

// perfevents' Zipkin example with Debian's basictracer: tagged spans carry their counts, others nothing.
func TestWrapTracerWithBasictracer(t *testing.T) {
	rec := basictracer.NewInMemoryRecorder()
	tr := WrapTracer(basictracer.New(rec))
	parent := tr.StartSpan("parent", opentracing.Tag{Key: "perfevents", Value: "task-clock,cpu-cycles,cache-misses"})
	child := tr.StartSpan("child", opentracing.ChildOf(parent.Context()), opentracing.Tag{Key: "perfevents", Value: "page-faults,task-clock"})
	truth := workload.Spin(20 * time.Millisecond)
	child.Finish()
	plain := tr.StartSpan("plain", opentracing.ChildOf(parent.Context()))
	plain.Finish()
	parent.Finish()
	spans := rec.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	by := map[string]basictracer.RawSpan{}
	for _, s := range spans {
		by[s.Operation] = s
		t.Logf("%s: %v", s.Operation, s.Tags)
	}
	c := by["child"].Tags
	tc, _ := c["perf.task_clock_ms"].(float64)
	if tc < 0.95*float64(truth)/1e6 || tc > 1.2*float64(truth)/1e6+5 {
		t.Errorf("child: perf.task_clock_ms %v for %v of thread CPU", c["perf.task_clock_ms"], truth)
	}
	if _, ok := c["perf.page_faults"].(int64); !ok {
		t.Errorf("child: no perf.page_faults")
	}
	p := by["parent"].Tags
	if pt, _ := p["perf.task_clock_ms"].(float64); pt < tc {
		t.Errorf("parent's task-clock %v below its child's %v", pt, tc)
	}
	if _, err := os.Stat("/sys/bus/event_source/devices/cpu"); err != nil && p["perf.unavailable"] != "cpu-cycles,cache-misses" {
		t.Errorf("parent: perf.unavailable %v", p["perf.unavailable"])
	}
	if _, ok := by["plain"].Tags["perf.task_clock_ms"]; ok {
		t.Errorf("an untagged span got counters")
	}
	if by["child"].ParentSpanID != by["parent"].Context.SpanID {
		t.Errorf("child's parent lost through the wrapper")
	}
}

// The observer's method set, driven as a tracer that takes observers drives it.
func TestObserver(t *testing.T) {
	rec := basictracer.NewInMemoryRecorder()
	tr := basictracer.New(rec)
	o := NewObserver()
	opts := opentracing.StartSpanOptions{Tags: opentracing.Tags{"perfevents": "task-clock"}}
	sp := tr.StartSpan("observed", opentracing.Tags{"perfevents": "task-clock"})
	so, ok := o.OnStartSpan(sp, "observed", opts)
	if !ok {
		t.Fatal("observer declined a tagged span")
	}
	workload.Spin(5 * time.Millisecond)
	so.OnSetOperationName("renamed")
	so.OnSetTag("k", "v")
	so.OnFinish(opentracing.FinishOptions{})
	sp.Finish()
	if v, _ := rec.GetSpans()[0].Tags["perf.task_clock_ms"].(float64); v < 4 {
		t.Errorf("observed: perf.task_clock_ms %v for 5 ms", v)
	}
	if _, ok := o.OnStartSpan(sp, "untagged", opentracing.StartSpanOptions{}); ok {
		t.Error("observer took an untagged span")
	}
}
