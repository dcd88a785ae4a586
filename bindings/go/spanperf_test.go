// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

package spanperf

import (
	"context"
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"spanperf/internal/workload"
)

const events = "task-clock,context-switches,page-faults"

func TestCountersAgainstTruth(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := CountersOpen(events, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	truth := workload.Spin(100 * time.Millisecond)
	workload.Touch(t, 500)
	m, _ := c.Read()
	// Switches around the sleeps alone: a spin on a shared host is preempted by others' work.
	sw := workload.Sleeps(20)
	b, _ := c.Read()
	tc, cs, pf := m[0]-a[0], b[1]-m[1], m[2]-a[2]
	t.Logf("task-clock %.3f ms (thread CPU %.3f ms), %d switches for 20 sleeps, %d faults for 500 pages; paths %v",
		float64(tc)/1e6, float64(truth)/1e6, cs, pf, c.Paths())
	if float64(tc) < 0.98*float64(truth) {
		t.Errorf("task-clock %d ns below the thread's %d ns", tc, truth)
	}
	if cs < 20 || int64(cs) < sw || int64(cs) > sw+2 {
		t.Errorf("context-switches %d for 20 sleeps (the thread's own count: %d)", cs, sw)
	}
	if pf < 500 || pf > 516 {
		t.Errorf("page-faults %d for 500 fresh pages", pf)
	}
	c.Close()
	if err := c.ReadInto(make([]uint64, 3)); err == nil {
		t.Error("a closed handle read")
	}
}

func TestUncountableEvent(t *testing.T) {
	if _, err := os.Stat("/sys/bus/event_source/devices/cpu"); err == nil {
		t.Skip("this machine has a hardware PMU: cycles can be counted")
	}
	_, err := CountersOpen("cycles", 0)
	if err == nil || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("cycles with no PMU: %v", err)
	}
	t.Log(err)
	if _, err := CountersOpen("no-such-event", 0); err == nil {
		t.Fatal("a bad event name opened")
	}
}

func TestMeasure(t *testing.T) {
	var truth time.Duration
	v, err := Measure("task-clock", func() { truth = workload.Spin(20 * time.Millisecond) })
	if err != nil {
		t.Fatal(err)
	}
	if float64(v[0]) < 0.98*float64(truth) || float64(v[0]) > 1.5*float64(truth) {
		t.Errorf("Measure: task-clock %d ns for %d ns of thread CPU", v[0], truth)
	}
}

// One Read of task-clock, context-switches and page-faults from Go.
func BenchmarkCountersRead(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := CountersOpen(events, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	v := make([]uint64, 3)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.ReadInto(v)
	}
}

func gettid() int { return syscall.Gettid() }

// ReadInto allocates nothing (the seeds' Profiler read allocated 32 bytes).
func TestReadIntoAllocatesNothing(t *testing.T) {
	c, err := CountersOpen(events, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := make([]uint64, 3)
	if n := testing.AllocsPerRun(1000, func() { c.ReadInto(v) }); n != 0 {
		t.Errorf("ReadInto: %v allocations a call", n)
	}
}

// A handle locks its goroutine to the thread it counts until Close, whatever the goroutine does between.
func TestHandlesLockTheirThread(t *testing.T) {
	c, err := CountersOpen("task-clock", 0)
	if err != nil {
		t.Fatal(err)
	}
	tid := gettid()
	for i := 0; i < 1000; i++ {
		runtime.Gosched()
		go func() {}()
	}
	if gettid() != tid {
		t.Errorf("the goroutine left its counted thread %d for %d", tid, gettid())
	}
	a, _ := c.Read()
	truth := workload.Spin(20 * time.Millisecond)
	b, _ := c.Read()
	c.Close()
	if d := b[0] - a[0]; float64(d) < 0.95*float64(truth) {
		t.Errorf("task-clock %d for %d of the thread's CPU", d, truth)
	}
}

// An event this machine cannot count never empties the rest; the span says what it could not count.
func TestSpanKeepsWhatItCanCount(t *testing.T) {
	if err := SpanBegin("mixed", "task-clock,cpu-cycles,cache-misses,page-faults"); err != nil {
		t.Fatal(err)
	}
	truth := workload.Spin(20 * time.Millisecond)
	workload.Touch(t, 100)
	s, err := SpanEnd()
	if err != nil {
		t.Fatal(err)
	}
	a := s.Attributes()
	t.Logf("span %s: %v; unavailable %v", s.Name, a, s.Unavailable)
	tc, _ := a["perf.task_clock_ms"].(float64)
	if tc < 0.95*float64(truth)/1e6 || tc > 1.2*float64(truth)/1e6+5 {
		t.Errorf("perf.task_clock_ms %.3f for %.3f ms of thread CPU", tc, float64(truth)/1e6)
	}
	if pf, _ := a["perf.page_faults"].(int64); pf < 100 || pf > 116 {
		t.Errorf("perf.page_faults %d for 100 fresh pages", pf)
	}
	if _, err := os.Stat("/sys/bus/event_source/devices/cpu"); err != nil {
		if a["perf.unavailable"] != "cpu-cycles,cache-misses" {
			t.Errorf("perf.unavailable %v", a["perf.unavailable"])
		}
		if w := s.Unavailable["cpu-cycles"]; w == "" {
			t.Errorf("no reason for cpu-cycles")
		}
	}
	// Nested spans: the parent id is the outer span's.
	SpanBegin("outer", "")
	SpanBegin("inner", "page-faults")
	in, _ := SpanEnd()
	out, _ := SpanEnd()
	if in.ParentSpanID != out.SpanID || in.TraceID != out.TraceID {
		t.Errorf("inner's parent %x, outer %x", in.ParentSpanID, out.SpanID)
	}
	if len(in.Events) != 1 || len(out.Events) != 3 {
		t.Errorf("per-span events: inner %v, outer %v", in.Events, out.Events)
	}
}

func TestEnableDisableResetValues(t *testing.T) {
	c, err := CountersOpen("task-clock,page-faults", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	workload.Spin(5 * time.Millisecond)
	c.Disable()
	a, _ := c.ReadValues()
	workload.Spin(10 * time.Millisecond)
	b, _ := c.ReadValues()
	if b[0].Value-a[0].Value > 1000000 || a[0].TimeRunning == 0 || a[0].TimeRunning > a[0].TimeEnabled {
		t.Errorf("disabled: %+v then %+v", a[0], b[0])
	}
	c.Enable()
	c.Reset()
	v, _ := c.Read()
	if v[0] > 1000000 {
		t.Errorf("after reset: task-clock %d", v[0])
	}
}

// perf-utils' profiles: a field per event, nil where uncountable, the rest against the thread's truth.
func TestProfiles(t *testing.T) {
	sw, err := NewSoftwareProfiler(0, -1)
	if err != nil {
		t.Fatal(err)
	}
	sw.Reset()
	truth := workload.Spin(20 * time.Millisecond)
	p, err := sw.Profile()
	sw.Close()
	if err != nil {
		t.Fatal(err)
	}
	if p.TaskClock == nil || float64(*p.TaskClock) < 0.95*float64(truth) || p.PageFaults == nil || p.TimeEnabled == nil {
		t.Errorf("software profile: %+v for %v", p, truth)
	}
	hw, err := NewHardwareProfiler(0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer hw.Close()
	h, err := hw.Profile()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/sys/bus/event_source/devices/cpu"); err != nil {
		if h.CPUCycles != nil || h.Instructions != nil || len(hw.Unavailable()) != 10 {
			t.Errorf("hardware profile with no PMU: %+v, unavailable %v", h, hw.Unavailable())
		}
	}
	cp, err := NewCacheProfiler(0, -1)
	if err != nil {
		t.Fatal(err)
	}
	cp.Close()
}

// The pool's workers are bound to their CPU and each call is a counted span.
func TestPoolBoundAndCounted(t *testing.T) {
	p, err := NewPool(2, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 4; i++ {
		var mask [16]uint64
		var truth time.Duration
		s, err := p.Call(context.Background(), "pooled", func(ctx context.Context) {
			_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask[0])))
			if e != 0 {
				t.Error(e)
			}
			truth = workload.Spin(10 * time.Millisecond)
		})
		if err != nil {
			t.Fatal(err)
		}
		if mask[0] != 1 && mask[0] != 2 {
			t.Errorf("worker's affinity %b: not one CPU", mask[0])
		}
		tc := s.Attributes()["perf.task_clock_ms"].(float64)
		if tc < 0.95*float64(truth)/1e6 || tc > 1.2*float64(truth)/1e6+5 {
			t.Errorf("pooled span: task-clock %.3f ms for %v", tc, truth)
		}
	}
	if _, err := NewPool(1, []int{4095}); err == nil {
		t.Error("a worker bound to CPU 4095")
	}
}

func TestProbeHardwareCycles(t *testing.T) {
	s, err := ProbeHardwareCycles(99)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", s)
	if _, err := os.Stat("/sys/bus/event_source/devices/cpu"); err != nil && (!s.FellBack || s.Name != "cpu-clock" || s.Type != PerfTypeSoftware) {
		t.Errorf("no PMU, and no fallback: %+v", s)
	}
	if !s.Frequency || s.SamplePeriod != 99 {
		t.Errorf("spec %+v", s)
	}
}

// Counter read, span and pool call, ns a call (the seeds: 488 ns a read, 33,500 ns a span).
func BenchmarkSpan(b *testing.B) {
	for i := 0; i < b.N; i++ {
		SpanBegin("bench", "")
		SpanEnd()
	}
}

func BenchmarkPoolCall(b *testing.B) {
	p, err := NewPool(1, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	fn := func(context.Context) {}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Call(ctx, "bench", fn)
	}
}

func BenchmarkSamplerOpenClose(b *testing.B) {
	spec, err := ProbeHardwareCycles(99)
	if err != nil {
		b.Skip(err)
	}
	for i := 0; i < b.N; i++ {
		s, err := OpenAll(spec, -1)
		if err != nil {
			b.Skip(err)
		}
		s.Close()
	}
}
