// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

// Package spanperf counts what Go code costs the thread that runs it, with
// libspanperf (perf events, no root, no BPF), and annotates OpenTelemetry
// spans with those counts.
//
// Counters count an OS thread, and goroutines move between threads: hold
// runtime.LockOSThread while a handle is used.  Measure and the
// SpanProcessor do that themselves.
//
// Build (GOPATH mode, with libspanperf installed or its build tree on
// PKG_CONFIG_PATH):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode:$HOME/go go build
package spanperf

/*
#cgo pkg-config: spanperf
#include <errno.h>
#include <stdlib.h>
#include <spanperf/spanperf.h>
*/
import "C"

import (
	"runtime"
	"syscall"
	"unsafe"
)

// Flags of CountersOpen.
const (
	Kernel  = uint(C.SPANPERF_KERNEL)  // count kernel mode too (perf_event_paranoid <= 1 or CAP_PERFMON)
	Inherit = uint(C.SPANPERF_INHERIT) // add the threads the thread creates afterwards
)

// Counters is one perf group counting the OS thread that opened it.
type Counters struct {
	c     *C.struct_spanperf_counters
	names []string
	paths []string
	buf   []C.uint64_t
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

// CountersOpen opens events (the names `spanperf stat -e` takes, comma
// separated) on the calling OS thread.  An event this machine cannot count
// gives an error, never a handle that reads zeros.
func CountersOpen(events string, flags uint) (*Counters, error) {
	cs := C.CString(events)
	defer C.free(unsafe.Pointer(cs))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := C.spanperf_counters_open(cs, C.uint(flags))
	if h == nil {
		errno, _ := err.(syscall.Errno)
		return nil, lastError(errno)
	}
	n := int(C.spanperf_counters_count(h))
	c := &Counters{c: h, buf: make([]C.uint64_t, n)}
	for i := 0; i < n; i++ {
		c.names = append(c.names, C.GoString(C.spanperf_counters_name(h, C.int(i))))
		c.paths = append(c.paths, C.GoString(C.spanperf_counters_path(h, C.int(i))))
	}
	return c, nil
}

// Names are the events in the order Read gives their values.
func (c *Counters) Names() []string { return c.names }

// Paths say how each event is read: "rdpmc", "mmap", "read" or "rusage".
func (c *Counters) Paths() []string { return c.paths }

// ReadInto stores the counts since open into v (len(v) >= len(Names())),
// with no allocation.  Clocks are in nanoseconds.
func (c *Counters) ReadInto(v []uint64) error {
	if c == nil || c.c == nil {
		return &Error{Errno: syscall.EINVAL, Msg: "spanperf: read of a closed Counters"}
	}
	if len(v) < len(c.names) {
		return &Error{Errno: syscall.EINVAL, Msg: "spanperf: ReadInto needs one value per event"}
	}
	if r := C.spanperf_counters_read(c.c, &c.buf[0]); r != 0 {
		return lastError(syscall.Errno(-r))
	}
	for i := range c.buf {
		v[i] = uint64(c.buf[i])
	}
	return nil
}

// Read returns the counts since open.
func (c *Counters) Read() ([]uint64, error) {
	v := make([]uint64, len(c.names))
	return v, c.ReadInto(v)
}

// Close releases the events; closing twice is fine.
func (c *Counters) Close() {
	if c != nil && c.c != nil {
		C.spanperf_counters_close(c.c)
		c.c = nil
	}
}

// Measure returns what fn cost the thread that ran it, one value per event
// (perf-utils' perf.CPUInstructions(foo), for any events).
func Measure(events string, fn func()) ([]uint64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
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
