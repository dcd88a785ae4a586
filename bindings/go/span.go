// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

package spanperf

/*
#include <stdint.h>
#include <string.h>
#include <spanperf/spanperf.h>

// Go values cross as plain arguments, results come back in C memory: nothing
// of Go's escapes to the heap per span.
static int sp_go_begin(_GoString_ name, _GoString_ events, int ids, uint64_t t0, uint64_t t1, uint64_t s,
		       uint8_t flags)
{
	char buf[SPANPERF_NAME_MAX], ev[512];
	size_t n = _GoStringLen(name), m = _GoStringLen(events);
	uint8_t trace[16], span[8];

	n = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;
	memcpy(buf, _GoStringPtr(name), n);
	buf[n] = 0;
	m = m < sizeof(ev) - 1 ? m : sizeof(ev) - 1;
	memcpy(ev, _GoStringPtr(events), m);
	ev[m] = 0;
	if (!ids)
		return spanperf_span_begin_events(buf, ev);
	memcpy(trace, &t0, 8);
	memcpy(trace + 8, &t1, 8);
	memcpy(span, &s, 8);
	// No trace id (OpenTracing gives none): the enclosing span's, else a new one.
	return spanperf_span_begin_events_ids(buf, ev, t0 | t1 ? trace : NULL, span, flags);
}

// This thread's last ended span; read before the goroutine leaves the thread.
static __thread struct spanperf_span sp_go_last;

static struct spanperf_span *sp_go_end(int any, uint64_t s)
{
	uint8_t span[8];

	memcpy(span, &s, 8);
	return spanperf_span_end_id(any ? NULL : span, &sp_go_last) ? NULL : &sp_go_last;
}
*/
import "C"

import (
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Span is what a library span measured.
type Span struct {
	Name                 string
	TraceID              [16]byte
	SpanID, ParentSpanID [8]byte // ParentSpanID all zero: a root span
	Start, End           uint64  // CLOCK_MONOTONIC ns, as spanperf records
	Events               []string
	Deltas               []uint64          // one per Events; clocks in ns
	Unavailable          map[string]string // events this machine could not count, and why
	order                []string
}

// Duration is End - Start.
func (s *Span) Duration() time.Duration { return time.Duration(s.End - s.Start) }

// Attributes are the counters as spanperf's OTLP writer names them:
// perf.task_clock_ms (a float64), perf.page_faults (an int64), ... and
// perf.unavailable ("cpu-cycles,cache-misses") when some could not be counted.
func (s *Span) Attributes() map[string]interface{} {
	m := make(map[string]interface{}, len(s.Events)+1)
	for i, ev := range s.Events {
		k, clock := AttrKey(ev)
		if clock {
			m[k] = float64(s.Deltas[i]) / 1e6
		} else {
			m[k] = int64(s.Deltas[i])
		}
	}
	if u := s.UnavailableList(); u != "" {
		m["perf.unavailable"] = u
	}
	return m
}

// UnavailableList is the events left out, comma separated in the span's order ("" for none).
func (s *Span) UnavailableList() string {
	var b strings.Builder
	for _, ev := range s.order {
		if _, ok := s.Unavailable[ev]; ok {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(ev)
		}
	}
	return b.String()
}

// AttrKey is the attribute name spanperf gives an event: perf. + the name
// with '-' as '_', clocks in ms (perf.task_clock_ms); clock says which.
func AttrKey(event string) (key string, clock bool) {
	var b strings.Builder
	base := event
	if i := strings.IndexByte(base, ':'); i >= 0 {
		base = base[:i]
	}
	clock = base == "task-clock" || base == "cpu-clock"
	b.WriteString("perf.")
	for _, r := range strings.ToLower(event) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if clock {
		b.WriteString("_ms")
	}
	return b.String(), clock
}

// SpanBegin begins a span on this goroutine's thread, counting events
// (comma separated; "" for SPANPERF_EVENTS or the default
// task-clock,context-switches,page-faults).  The goroutine stays locked to
// its thread until SpanEnd.  While the span runs it is the thread's
// OpenTelemetry context, so `spanperf record --otel` sees it.
func SpanBegin(name, events string) error {
	runtime.LockOSThread()
	if r := C.sp_go_begin(name, events, 0, 0, 0, 0, 0); r != 0 {
		err := lastError(syscall.Errno(-r))
		runtime.UnlockOSThread()
		return err
	}
	return nil
}

// SpanEnd ends this goroutine's innermost span and unlocks its thread once.
func SpanEnd() (*Span, error) {
	out := C.sp_go_end(1, 0)
	if out == nil {
		return nil, lastError(syscall.ENOENT)
	}
	s := spanOf(out)
	runtime.UnlockOSThread()
	return s, nil
}

// BeginWithIDs is SpanBegin with a tracer's ids (the OpenTelemetry and
// OpenTracing packages use it).
func BeginWithIDs(name, events string, trace [16]byte, span [8]byte, flags byte) error {
	runtime.LockOSThread()
	t0 := *(*uint64)(unsafe.Pointer(&trace[0]))
	t1 := *(*uint64)(unsafe.Pointer(&trace[8]))
	s := *(*uint64)(unsafe.Pointer(&span[0]))
	if r := C.sp_go_begin(name, events, 1, C.uint64_t(t0), C.uint64_t(t1), C.uint64_t(s), C.uint8_t(flags)); r != 0 {
		err := lastError(syscall.Errno(-r))
		runtime.UnlockOSThread()
		return err
	}
	return nil
}

// EndWithID ends the span begun with BeginWithIDs if it is this thread's
// innermost (and unlocks the thread); nil if it is not: a span ended on
// another goroutine than it began keeps no counters.
func EndWithID(span [8]byte) *Span {
	out := C.sp_go_end(0, C.uint64_t(*(*uint64)(unsafe.Pointer(&span[0]))))
	if out == nil {
		return nil
	}
	s := spanOf(out)
	runtime.UnlockOSThread()
	return s
}

func spanOf(out *C.struct_spanperf_span) *Span {
	s := &Span{
		Name:  C.GoString(&out.name[0]),
		Start: uint64(out.start_ns),
		End:   uint64(out.end_ns),
	}
	C.memcpy(unsafe.Pointer(&s.TraceID[0]), unsafe.Pointer(&out.trace_id[0]), 16)
	C.memcpy(unsafe.Pointer(&s.SpanID[0]), unsafe.Pointer(&out.span_id[0]), 8)
	C.memcpy(unsafe.Pointer(&s.ParentSpanID[0]), unsafe.Pointer(&out.parent_span_id[0]), 8)
	n := int(out.nr_counters)
	s.Events = make([]string, n)
	s.Deltas = make([]uint64, n)
	for i := 0; i < n; i++ {
		s.Events[i] = eventName(out.counter_names[i])
		s.Deltas[i] = uint64(out.deltas[i])
	}
	if u := int(out.nr_unavailable); u > 0 {
		s.Unavailable = make(map[string]string, u)
		for i := 0; i < u; i++ {
			ev := eventName(out.unavailable[i])
			s.Unavailable[ev] = C.GoString(out.unavailable_why[i])
			s.order = append(s.order, ev)
		}
	}
	return s
}

func eventName(p *C.char) string { return C.GoString(p) }
