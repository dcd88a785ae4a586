// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

package spanperf

/*
#include <stdint.h>
#include <string.h>
#include <spanperf/spanperf.h>

// Go values cross as plain arguments, results come back in C memory: nothing
// of Go's escapes to the heap per span.
static int sp_go_begin(_GoString_ name, uint64_t t0, uint64_t t1, uint64_t s, uint8_t flags)
{
	char buf[SPANPERF_NAME_MAX];
	size_t n = _GoStringLen(name);
	uint8_t trace[16], span[8];

	n = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;
	memcpy(buf, _GoStringPtr(name), n);
	buf[n] = 0;
	memcpy(trace, &t0, 8);
	memcpy(trace + 8, &t1, 8);
	memcpy(span, &s, 8);
	return spanperf_span_begin_ids(buf, trace, span, flags);
}

// This thread's last ended span; read before the goroutine leaves the thread.
static __thread struct spanperf_span sp_go_last;

static struct spanperf_span *sp_go_end(uint64_t s)
{
	uint8_t span[8];

	memcpy(span, &s, 8);
	return spanperf_span_end_id(span, &sp_go_last) ? NULL : &sp_go_last;
}
*/
import "C"

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// SpanProcessor annotates each span with what it cost its goroutine's
// thread: the counters are read at start and at end, and the deltas become
// span attributes named as spanperf names them (perf.task_clock_ms,
// perf.context_switches, perf.page_faults; SPANPERF_EVENTS chooses the
// events).  While a span runs, its goroutine is locked to its OS thread and
// the span is that thread's OpenTelemetry thread context (OTEP 4947), so
// `spanperf record --otel` sees it with its trace and span ids.
//
// The SDK's SpanProcessor sees spans read-only at their end, so this one
// wraps the processor that exports them (a batch or simple processor):
//
//	sdktrace.WithSpanProcessor(spanperf.NewSpanProcessor(sdktrace.NewBatchSpanProcessor(exp)))
//
// End a span on the goroutine that started it (defer span.End()): a span
// ended elsewhere goes on without counter attributes, and the goroutine that
// started it stays locked to its thread until it exits.
type SpanProcessor struct {
	next sdktrace.SpanProcessor
}

var _ sdktrace.SpanProcessor = (*SpanProcessor)(nil)

// NewSpanProcessor wraps next, which receives every span with the counter attributes added.
func NewSpanProcessor(next sdktrace.SpanProcessor) *SpanProcessor {
	return &SpanProcessor{next: next}
}

// OnStart locks the goroutine to its thread and begins the library's span with the SDK's ids.
func (p *SpanProcessor) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()

	runtime.LockOSThread()
	if C.sp_go_begin(s.Name(), C.uint64_t(*(*uint64)(unsafe.Pointer(&tid[0]))),
		C.uint64_t(*(*uint64)(unsafe.Pointer(&tid[8]))), C.uint64_t(*(*uint64)(unsafe.Pointer(&sid[0]))),
		C.uint8_t(sc.TraceFlags())) != 0 {
		runtime.UnlockOSThread()
	}
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

type counterKey struct {
	key   attribute.Key
	clock bool
}

// keys caches each event name's attribute key by the address of the name,
// which stays put while its thread's counters are open.
var keys sync.Map

// attrKey is the name spanperf's OTLP writer gives an event: perf. + the name with '-' as '_', clocks in ms.
func attrKey(event string) counterKey {
	var b strings.Builder
	clock := event == "task-clock" || event == "cpu-clock"
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
	return counterKey{attribute.Key(b.String()), clock}
}

func keyOf(name *C.char) counterKey {
	if k, ok := keys.Load(uintptr(unsafe.Pointer(name))); ok {
		return k.(counterKey)
	}
	k := attrKey(C.GoString(name))
	keys.Store(uintptr(unsafe.Pointer(name)), k)
	return k
}

// OnEnd ends the library's span, if it is this thread's innermost, and hands next the span with its counts.
func (p *SpanProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	sid := s.SpanContext().SpanID()

	if out := C.sp_go_end(C.uint64_t(*(*uint64)(unsafe.Pointer(&sid[0])))); out != nil {
		n := int(out.nr_counters)
		extra := make([]attribute.KeyValue, n)
		for i := 0; i < n; i++ {
			k, d := keyOf(out.counter_names[i]), uint64(out.deltas[i])
			if k.clock {
				extra[i] = k.key.Float64(float64(d) / 1e6)
			} else {
				extra[i] = k.key.Int64(int64(d))
			}
		}
		runtime.UnlockOSThread()
		s = counted{s, extra}
	}
	p.next.OnEnd(s)
}

// Shutdown shuts next down.
func (p *SpanProcessor) Shutdown(ctx context.Context) error { return p.next.Shutdown(ctx) }

// ForceFlush flushes next.
func (p *SpanProcessor) ForceFlush(ctx context.Context) error { return p.next.ForceFlush(ctx) }
