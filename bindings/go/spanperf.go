// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

// Package spanperf counts what Go code costs the thread that runs it, with
// libspanperf (perf events, no root, no BPF): counters, spans, per-CPU
// samplers with a BPF program, named profiles and a pool of goroutines bound
// to CPUs.  It depends on the standard library only; the OpenTelemetry
// processor (spanperf/otelperf) and the OpenTracing wrapper (spanperf/otperf)
// are packages of their own.
//
// Counters count an OS thread, and goroutines move between threads: every
// handle locks its goroutine to its thread from open to Close (and a span from
// begin to end), so open, read and close a handle on one goroutine.
//
// Build, module mode with no network (libspanperf's spanperf.pc on
// PKG_CONFIG_PATH):
//
//	require spanperf v0.0.0
//	replace spanperf => /path/to/spanperf/bindings/go
//	GOFLAGS=-mod=mod GOPROXY=off go build
//
// or GOPATH mode, with bindings/go linked as $GOPATH/src/spanperf.
package spanperf

/*
#cgo pkg-config: spanperf
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <spanperf/spanperf.h>

// Integers across, not pointers: cgo moves a call's pointer arguments to the heap (before Go 1.22).
static int sp_go_read(uintptr_t c, uintptr_t buf)
{
	return spanperf_counters_read((struct spanperf_counters *)c, (uint64_t *)buf);
}
*/
import "C"

import (
	"runtime"
	"syscall"
	"unsafe"
)

// Flags of CountersOpen.
const (
	Kernel          = uint(C.SPANPERF_KERNEL)           // count kernel mode too (perf_event_paranoid <= 1 or CAP_PERFMON)
	Inherit         = uint(C.SPANPERF_INHERIT)          // add the threads the thread creates afterwards
	SkipUncountable = uint(C.SPANPERF_SKIP_UNCOUNTABLE) // keep what can be counted; Unavailable names the rest
)

// Counters is one perf group counting the OS thread that opened it (or the
// target of CountersOpenTarget).
type Counters struct {
	c      *C.struct_spanperf_counters
	names  []string
	paths  []string
	why    []string    // "" where counted
	buf    *C.uint64_t // C memory: a read passes no Go pointer, so it allocates nothing
	vals   *C.struct_spanperf_value
	n      int
	locked bool
}

// Value is one event's reading with its times (perf's TOTAL_TIME_ENABLED and
// _RUNNING); Value is Raw scaled by TimeEnabled / TimeRunning when multiplexed.
type Value struct {
	Value, Raw, TimeEnabled, TimeRunning uint64
}

// Error is a failure as libspanperf explains it: one sentence naming the
// event and why, with the errno.
type Error struct {
	Errno syscall.Errno
	Msg   string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap lets errors.Is(err, syscall.ENOENT) see the errno.
func (e *Error) Unwrap() error { return e.Errno }

// lastError reads the C library's per-thread sentence: call it locked to the thread that failed.
func lastError(errno syscall.Errno) error {
	return &Error{Errno: errno, Msg: C.GoString(C.spanperf_strerror())}
}

func errnoOf(err error) syscall.Errno {
	e, _ := err.(syscall.Errno)
	return e
}

// CountersOpen opens events (the names `spanperf stat -e` takes, comma
// separated) on the calling OS thread, and locks the goroutine to it until
// Close.  An event this machine cannot count gives an error, never a handle
// that reads zeros, unless flags has SkipUncountable.
func CountersOpen(events string, flags uint) (*Counters, error) {
	return open(events, flags, 0, -1)
}

// CountersOpenTarget counts another target, as perf_event_open takes it: pid
// > 0 a thread or process, pid -1 with cpu >= 0 every thread on that CPU.
// perf's permission rules apply (ptrace access to the process; CAP_PERFMON
// or perf_event_paranoid <= 0 for a CPU).  It locks nothing: any goroutine
// may read it, one at a time.
func CountersOpenTarget(events string, flags uint, pid, cpu int) (*Counters, error) {
	return open(events, flags, pid, cpu)
}

func open(events string, flags uint, pid, cpu int) (*Counters, error) {
	cs := C.CString(events)
	defer C.free(unsafe.Pointer(cs))
	runtime.LockOSThread()
	h, err := C.spanperf_counters_open_target(cs, C.uint(flags), C.int(pid), C.int(cpu))
	if h == nil {
		e := lastError(errnoOf(err))
		runtime.UnlockOSThread()
		return nil, e
	}
	n := int(C.spanperf_counters_count(h))
	c := &Counters{c: h, n: n, locked: pid == 0}
	c.buf = (*C.uint64_t)(C.calloc(C.size_t(n+1), 8))
	c.vals = (*C.struct_spanperf_value)(C.calloc(C.size_t(n+1), C.size_t(unsafe.Sizeof(C.struct_spanperf_value{}))))
	for i := 0; i < n; i++ {
		c.names = append(c.names, C.GoString(C.spanperf_counters_name(h, C.int(i))))
		c.paths = append(c.paths, C.GoString(C.spanperf_counters_path(h, C.int(i))))
		c.why = append(c.why, C.GoString(C.spanperf_counters_why(h, C.int(i))))
	}
	if !c.locked {
		runtime.UnlockOSThread()
	}
	return c, nil
}

// Names are the events in the order Read gives their values.
func (c *Counters) Names() []string { return c.names }

// Paths say how each event is read: "rdpmc", "mmap", "read", "rusage", or "none" (left out).
func (c *Counters) Paths() []string { return c.paths }

// Unavailable maps each event SkipUncountable left out to why (empty when all are counted).
func (c *Counters) Unavailable() map[string]string {
	m := map[string]string{}
	for i, w := range c.why {
		if w != "" {
			m[c.names[i]] = w
		}
	}
	return m
}

func (c *Counters) closed() error {
	return &Error{Errno: syscall.EINVAL, Msg: "spanperf: use of a closed Counters"}
}

// ReadInto stores the counts since open into v (len(v) >= len(Names())),
// with no allocation.  Clocks are in nanoseconds; events left out read 0.
func (c *Counters) ReadInto(v []uint64) error {
	if c == nil || c.c == nil {
		return c.closed()
	}
	if len(v) < c.n {
		return &Error{Errno: syscall.EINVAL, Msg: "spanperf: ReadInto needs one value per event"}
	}
	if r := C.sp_go_read(C.uintptr_t(uintptr(unsafe.Pointer(c.c))), C.uintptr_t(uintptr(unsafe.Pointer(c.buf)))); r != 0 {
		return lastError(syscall.Errno(-r))
	}
	copy(v, unsafe.Slice((*uint64)(unsafe.Pointer(c.buf)), c.n))
	return nil
}

// Read returns the counts since open.
func (c *Counters) Read() ([]uint64, error) {
	v := make([]uint64, c.n)
	return v, c.ReadInto(v)
}

// ReadValues returns each event's count with its times.
func (c *Counters) ReadValues() ([]Value, error) {
	if c == nil || c.c == nil {
		return nil, c.closed()
	}
	if r := C.spanperf_counters_read_values(c.c, c.vals); r != 0 {
		return nil, lastError(syscall.Errno(-r))
	}
	out := make([]Value, c.n)
	for i, v := range unsafe.Slice(c.vals, c.n) {
		out[i] = Value{uint64(v.value), uint64(v.raw), uint64(v.time_enabled), uint64(v.time_running)}
	}
	return out, nil
}

func (c *Counters) ctl(r C.int) error {
	if r != 0 {
		return lastError(syscall.Errno(-r))
	}
	return nil
}

// Enable starts the group counting again after Disable (handles open enabled).
func (c *Counters) Enable() error {
	if c == nil || c.c == nil {
		return c.closed()
	}
	return c.ctl(C.spanperf_counters_enable(c.c))
}

// Disable stops the group counting; its counts stand still.
func (c *Counters) Disable() error {
	if c == nil || c.c == nil {
		return c.closed()
	}
	return c.ctl(C.spanperf_counters_disable(c.c))
}

// Reset sets the counts (not the times) to 0.
func (c *Counters) Reset() error {
	if c == nil || c.c == nil {
		return c.closed()
	}
	return c.ctl(C.spanperf_counters_reset(c.c))
}

// Close releases the events and unlocks the goroutine; closing twice is fine.
func (c *Counters) Close() {
	if c != nil && c.c != nil {
		C.spanperf_counters_close(c.c)
		C.free(unsafe.Pointer(c.buf))
		C.free(unsafe.Pointer(c.vals))
		c.c = nil
		if c.locked {
			runtime.UnlockOSThread()
		}
	}
}

// Measure returns what fn cost the thread that ran it, one value per event
// (perf-utils' perf.CPUInstructions(foo), for any events).
func Measure(events string, fn func()) ([]uint64, error) {
	c, err := CountersOpen(events, 0)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	before, err := c.Read()
	if err != nil {
		return nil, err
	}
	fn()
	after, err := c.Read()
	if err != nil {
		return nil, err
	}
	for i := range after {
		after[i] -= before[i]
	}
	return after, nil
}
