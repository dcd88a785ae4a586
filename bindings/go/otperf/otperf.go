// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

// Package otperf attaches libspanperf's counters to OpenTracing spans, as
// perfevents did for Zipkin and Jaeger: a span started with the tag
// perfevents ("cpu-cycles,cache-misses") carries the counts of those events
// as tags when it finishes (perf.cpu_cycles, perf.cache_misses, ...; clocks
// in ms as perf.task_clock_ms; perf.unavailable names what this machine
// could not count).
//
// Two ways in: NewObserver has go-observer's method set (OnStartSpan, and
// OnSetOperationName, OnSetTag, OnFinish on what it returns) for tracers that
// take observers; WrapTracer wraps any opentracing.Tracer for those that do
// not.  The span's goroutine is locked to its thread from start to finish:
// finish it on the goroutine that started it.
package otperf

import (
	"crypto/rand"
	"fmt"

	opentracing "github.com/opentracing/opentracing-go"

	"spanperf"
)

// TagKey is the tag that asks for counters, as perfevents' tag.
const TagKey = "perfevents"

// Observer is perfevents' observer (go-observer's Observer method set).
type Observer struct{}

// NewObserver returns the observer to give a tracer's WithObserver option.
func NewObserver() *Observer { return &Observer{} }

// SpanObserver follows one span (go-observer's SpanObserver method set).
type SpanObserver struct {
	sp   opentracing.Span
	id   [8]byte
	open bool
}

func events(tags opentracing.Tags) (string, bool) {
	v, ok := tags[TagKey]
	if !ok {
		return "", false
	}
	return fmt.Sprint(v), true
}

// begin starts the library span for sp, with an id of its own (OpenTracing
// has no portable way to read a span's ids).
func begin(name, evs string) (id [8]byte, err error) {
	rand.Read(id[:])
	return id, spanperf.BeginWithIDs(name, evs, [16]byte{}, id, 1)
}

// OnStartSpan begins counting when the span has the perfevents tag; false otherwise.
func (o *Observer) OnStartSpan(sp opentracing.Span, operationName string, options opentracing.StartSpanOptions) (*SpanObserver, bool) {
	evs, ok := events(options.Tags)
	if !ok {
		return nil, false
	}
	id, err := begin(operationName, evs)
	if err != nil {
		sp.SetTag("perf.error", err.Error())
		return nil, false
	}
	return &SpanObserver{sp: sp, id: id, open: true}, true
}

// OnSetOperationName: the library span keeps the name it began with.
func (s *SpanObserver) OnSetOperationName(operationName string) {}

// OnSetTag: the events are chosen at start.
func (s *SpanObserver) OnSetTag(key string, value interface{}) {}

// OnFinish tags the span with its counts.
func (s *SpanObserver) OnFinish(options opentracing.FinishOptions) {
	if s.open {
		s.open = false
		tag(s.sp, spanperf.EndWithID(s.id))
	}
}

func tag(sp opentracing.Span, out *spanperf.Span) {
	if out == nil {
		sp.SetTag("perf.error", "the span finished on another goroutine than it started: no counters")
		return
	}
	for k, v := range out.Attributes() {
		sp.SetTag(k, v)
	}
}

// WrapTracer wraps t so that its spans tagged perfevents carry their counts when they finish.
func WrapTracer(t opentracing.Tracer) opentracing.Tracer { return &tracer{Tracer: t} }

type tracer struct {
	opentracing.Tracer
}

type span struct {
	opentracing.Span
	t    *tracer
	obs  *SpanObserver
	done bool
}

func (t *tracer) StartSpan(operationName string, opts ...opentracing.StartSpanOption) opentracing.Span {
	var o opentracing.StartSpanOptions
	for _, opt := range opts {
		opt.Apply(&o)
	}
	// Our spans embed the inner tracer's, so their contexts are its own: opts pass as they are.
	sp := t.Tracer.StartSpan(operationName, opts...)
	obs, _ := NewObserver().OnStartSpan(sp, operationName, o)
	return &span{Span: sp, t: t, obs: obs}
}

func (s *span) Tracer() opentracing.Tracer { return s.t }

func (s *span) Finish() { s.FinishWithOptions(opentracing.FinishOptions{}) }

func (s *span) FinishWithOptions(opts opentracing.FinishOptions) {
	if !s.done && s.obs != nil {
		s.obs.OnFinish(opts)
	}
	s.done = true
	s.Span.FinishWithOptions(opts)
}

func (s *span) SetOperationName(name string) opentracing.Span {
	s.Span.SetOperationName(name)
	return s
}

func (s *span) SetTag(key string, value interface{}) opentracing.Span {
	s.Span.SetTag(key, value)
	return s
}

func (s *span) SetBaggageItem(k, v string) opentracing.Span {
	s.Span.SetBaggageItem(k, v)
	return s
}
