// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

// Package workload holds what the binding's tests (the core package's, otelperf's and otperf's)
// hold their counters to: the calling thread's own clocks and counts, and work of a known
// size. It is internal: no consumer of the binding sees it.
package workload

import (
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// ThreadCPU is the calling thread's CPU clock: the truth the counters are held to.
func ThreadCPU() time.Duration {
	var ts syscall.Timespec
	// CLOCK_THREAD_CPUTIME_ID = 3
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

var sink uint64

// Spin runs on the CPU for d of the thread's own time and returns how long it ran.
func Spin(d time.Duration) time.Duration {
	t0 := ThreadCPU()
	for ThreadCPU()-t0 < d {
		for i := 0; i < 1000; i++ {
			sink += uint64(i)
		}
	}
	return ThreadCPU() - t0
}

// Touch writes one byte in each of n fresh pages of memory mapped outside Go's heap.
func Touch(t testing.TB, n int) {
	ps := os.Getpagesize()
	m, err := syscall.Mmap(-1, 0, n*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Madvise(m, 15) // MADV_NOHUGEPAGE: one fault per page
	for i := 0; i < n; i++ {
		m[i*ps] = 1
	}
	syscall.Munmap(m)
}

// Sleeps sleeps k times and returns the thread's own count of its switches meanwhile
// (getrusage RUSAGE_THREAD: voluntary and involuntary), the truth switches are held to:
// on a loaded host others' work preempts it too.
func Sleeps(k int) int64 {
	var a, b syscall.Rusage
	syscall.Getrusage(1, &a) // RUSAGE_THREAD
	for i := 0; i < k; i++ {
		ts := syscall.Timespec{Nsec: 500000}
		syscall.Nanosleep(&ts, nil)
	}
	syscall.Getrusage(1, &b)
	return b.Nvcsw + b.Nivcsw - a.Nvcsw - a.Nivcsw
}
