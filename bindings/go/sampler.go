// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

package spanperf

/*
#include <stdlib.h>
#include <string.h>
#include <spanperf/spanperf.h>
*/
import "C"

import (
	"syscall"
	"unsafe"
)

// perf_event_attr types and configs a spec names (perfevent's constants).
const (
	PerfTypeHardware     = 0
	PerfTypeSoftware     = 1
	PerfTypeTracepoint   = 2
	PerfCountHWCPUCycles = 0
	PerfCountSWCPUClock  = 0
)

// EventSpec is what a sampler samples: the perf-event configuration used to
// open per-CPU events, and (C: spanperf_sampler_spec_attr) the perf.data attr
// as `spanperf record` writes it.  SamplePeriod is a frequency in Hz when
// Frequency is true.
type EventSpec struct {
	Name         string
	Type         uint32
	Config       uint64
	SamplePeriod uint64
	Frequency    bool
	// FellBack is true when ProbeHardwareCycles chose cpu-clock; Why says why.
	FellBack bool
	Why      string
}

func (s *EventSpec) toC(out *C.struct_spanperf_sampler_spec) {
	C.memset(unsafe.Pointer(out), 0, C.size_t(unsafe.Sizeof(*out)))
	name := s.Name
	if len(name) > C.SPANPERF_NAME_MAX-1 {
		name = name[:C.SPANPERF_NAME_MAX-1]
	}
	for i := 0; i < len(name); i++ {
		out.name[i] = C.char(name[i])
	}
	out._type = C.uint32_t(s.Type)
	out.config = C.uint64_t(s.Config)
	out.sample_period = C.uint64_t(s.SamplePeriod)
	if s.Frequency {
		out.freq = 1
	}
}

func specOf(c *C.struct_spanperf_sampler_spec) EventSpec {
	return EventSpec{Name: C.GoString(&c.name[0]), Type: uint32(c._type), Config: uint64(c.config),
		SamplePeriod: uint64(c.sample_period), Frequency: c.freq != 0}
}

// ProbeHardwareCycles returns a spec for hardware cycles at hz; where the PMU
// is missing (EOPNOTSUPP, ENOENT, ENODEV, EINVAL, EACCES) one for cpu-clock,
// with FellBack and Why.  Any other error is returned, not papered over.
func ProbeHardwareCycles(hz uint) (EventSpec, error) {
	var c C.struct_spanperf_sampler_spec
	r := C.spanperf_probe_cycles(C.uint(hz), &c)
	if r < 0 {
		return EventSpec{}, lastError(syscall.Errno(-r))
	}
	s := specOf(&c)
	if r == 1 {
		s.FellBack, s.Why = true, C.GoString(C.spanperf_strerror())
	}
	return s, nil
}

// SpecForEvent returns a spec for any event `spanperf record -e` takes (a
// tracepoint too: "sched:sched_switch", perf-utils' ProfileTracepoint),
// sampled every period events, or at period Hz when freq.
func SpecForEvent(event string, period uint64, freq bool) (EventSpec, error) {
	var c C.struct_spanperf_sampler_spec
	cs := C.CString(event)
	defer C.free(unsafe.Pointer(cs))
	f := C.int(0)
	if freq {
		f = 1
	}
	if r := C.spanperf_sampler_spec_event(cs, C.uint64_t(period), f, &c); r != 0 {
		return EventSpec{}, lastError(syscall.Errno(-r))
	}
	return specOf(&c), nil
}

type config struct {
	deferred bool
	cpus     []int
}

// Option configures OpenAll.
type Option func(*config)

// WithDeferredEnable opens each event disabled and enables it only after the
// BPF program is attached to every CPU's event (spanperf always opens that
// way; the option is kept for perfevent's callers and is the default).
func WithDeferredEnable() Option { return func(c *config) { c.deferred = true } }

// WithCPUs samples these CPUs instead of every online one.
func WithCPUs(cpus ...int) Option { return func(c *config) { c.cpus = append([]int(nil), cpus...) } }

// Set is a bundle of per-CPU perf events with the program attached to each.
type Set struct {
	s *C.struct_spanperf_sampler
}

// OpenAll opens one event per online CPU as spec says, attaches the BPF
// program progFD (a perf_event program, or a tracepoint program for a
// tracepoint spec; -1 for none) to each, and enables them.  Offline CPUs
// (ESRCH, ENODEV) are skipped; none opened is an error.  On any failure
// everything opened so far is released: the caller never cleans up after an
// error.
func OpenAll(spec EventSpec, progFD int, opts ...Option) (*Set, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	var c C.struct_spanperf_sampler_spec
	spec.toC(&c)
	if len(cfg.cpus) > 0 {
		p := (*C.int)(C.calloc(C.size_t(len(cfg.cpus)), C.size_t(unsafe.Sizeof(C.int(0)))))
		defer C.free(unsafe.Pointer(p))
		for i, cpu := range cfg.cpus {
			unsafe.Slice(p, len(cfg.cpus))[i] = C.int(cpu)
		}
		c.cpus = p
		c.nr_cpus = C.int(len(cfg.cpus))
	}
	s, err := C.spanperf_sampler_open(&c, C.int(progFD), 0)
	if s == nil {
		return nil, lastError(errnoOf(err))
	}
	return &Set{s: s}, nil
}

// CPUs are the CPUs an event was opened on.
func (s *Set) CPUs() []int {
	n := int(C.spanperf_sampler_count(s.s))
	out := make([]int, n)
	for i := range out {
		out[i] = int(C.spanperf_sampler_cpu(s.s, C.int(i)))
	}
	return out
}

// FDs are the events' descriptors (still the Set's).
func (s *Set) FDs() []int {
	n := int(C.spanperf_sampler_count(s.s))
	out := make([]int, n)
	for i := range out {
		out[i] = int(C.spanperf_sampler_fd(s.s, C.int(i)))
	}
	return out
}

// Disable stops every CPU's event; Enable starts them again.
func (s *Set) Disable() error {
	if r := C.spanperf_sampler_disable(s.s); r != 0 {
		return lastError(syscall.Errno(-r))
	}
	return nil
}

// Enable starts every CPU's event.
func (s *Set) Enable() error {
	if r := C.spanperf_sampler_enable(s.s); r != 0 {
		return lastError(syscall.Errno(-r))
	}
	return nil
}

// Close disables every event and closes it (which detaches the program);
// safe to call more than once.
func (s *Set) Close() error {
	if s != nil && s.s != nil {
		C.spanperf_sampler_close(s.s)
		s.s = nil
	}
	return nil
}
