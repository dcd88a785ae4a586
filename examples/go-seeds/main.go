// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

// The four Go libraries spanperf grew from, their README examples ported to
// spanperf's Go binding.  Each line is "SEED EVENT VALUE" and, where the
// thread knows its own truth (its CPU clock, getrusage), "truth T".  Events
// this machine cannot count say why and the rest are kept.
//
//	go-seeds perf-utils|perfevents|opentelemetry-perf|perfevent
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	basictracer "github.com/opentracing/basictracer-go"
	opentracing "github.com/opentracing/opentracing-go"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"spanperf"
	"spanperf/otperf"
)

func threadCPU() uint64 {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0) // CLOCK_THREAD_CPUTIME_ID
	return uint64(ts.Nano())
}

func rusage() (minflt, csw uint64) {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return uint64(ru.Minflt), uint64(ru.Nvcsw + ru.Nivcsw)
}

var total int

// perf-utils' foo, made long enough to measure.
func foo() error {
	for i := 0; i < 20000000; i++ {
		total++
	}
	return nil
}

func report(seed string, c *spanperf.Counters, v []uint64, truth map[string]uint64) {
	un := c.Unavailable()
	for i, ev := range c.Names() {
		if why, ok := un[ev]; ok {
			fmt.Printf("%s %s unavailable: %s\n", seed, ev, why)
			continue
		}
		if t, ok := truth[ev]; ok {
			fmt.Printf("%s %s %d truth %d\n", seed, ev, v[i], t)
		} else {
			fmt.Printf("%s %s %d\n", seed, ev, v[i])
		}
	}
}

// perf-utils: how many CPU instructions foo takes (perf.CPUInstructions(foo)).
func perfUtils() error {
	if _, err := spanperf.Measure("instructions", func() { foo() }); err != nil {
		fmt.Printf("perf-utils Measure(instructions) failed: %v; keeping what can be counted\n", err)
	}
	c, err := spanperf.CountersOpen("instructions,task-clock", spanperf.SkipUncountable)
	if err != nil {
		return err
	}
	defer c.Close()
	a, _ := c.Read()
	t0 := threadCPU()
	foo()
	t1 := threadCPU()
	b, _ := c.Read()
	report("perf-utils", c, []uint64{b[0] - a[0], b[1] - a[1]}, map[string]uint64{"task-clock": t1 - t0})
	return nil
}

// perfevents: InitOpenEventsEnableSelf, EventsRead, EventsDisableClose; then its OpenTracing tag.
func perfevents() error {
	c, err := spanperf.CountersOpen("cpu-cycles,cache-misses,instructions,task-clock,page-faults,context-switches", spanperf.SkipUncountable)
	if err != nil {
		return err
	}
	a, _ := c.Read()
	t0 := threadCPU()
	f0, s0 := rusage()
	foo()
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	time.Sleep(time.Millisecond)
	t1 := threadCPU()
	f1, s1 := rusage()
	b, _ := c.Read()
	c.Disable()
	d := make([]uint64, len(a))
	for i := range a {
		d[i] = b[i] - a[i]
	}
	report("perfevents", c, d, map[string]uint64{"task-clock": t1 - t0, "page-faults": f1 - f0, "context-switches": s1 - s0})
	c.Close()

	rec := basictracer.NewInMemoryRecorder()
	tr := otperf.WrapTracer(basictracer.New(rec))
	sp := tr.StartSpan("name", opentracing.Tag{Key: "perfevents", Value: "cpu-cycles,cache-misses,task-clock"})
	foo()
	sp.Finish()
	for k, v := range rec.GetSpans()[0].Tags {
		fmt.Printf("perfevents tag %s=%v\n", k, v)
	}
	return nil
}

// opentelemetry-perf: a pool of goroutines locked to threads bound to CPUs, each call a span with counters.
func otelPerf() error {
	p, err := spanperf.NewPool(2, []int{0})
	if err != nil {
		return err
	}
	defer p.Close()
	p.Events = "cpu-cycles,instructions,task-clock"
	var truth uint64
	s, err := p.Call(context.Background(), "pooled", func(context.Context) {
		t0 := threadCPU()
		foo()
		truth = threadCPU() - t0
	})
	if err != nil {
		return err
	}
	for i, ev := range s.Events {
		if ev == "task-clock" {
			fmt.Printf("opentelemetry-perf %s %d truth %d\n", ev, s.Deltas[i], truth)
		}
	}
	for ev, why := range s.Unavailable {
		fmt.Printf("opentelemetry-perf %s unavailable: %s\n", ev, why)
	}
	return nil
}

// perfevent: probe cycles (cpu-clock on a VM), one event per CPU with a BPF program counting its runs.
func perfevent() error {
	spec, err := spanperf.ProbeHardwareCycles(100)
	if err != nil {
		return err
	}
	if spec.FellBack {
		fmt.Printf("perfevent fell back: %s\n", spec.Why)
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		return err
	}
	defer m.Close()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.PerfEvent, License: "GPL", Instructions: asm.Instructions{
		asm.StoreImm(asm.RFP, -4, 0, asm.Word), asm.LoadMapPtr(asm.R1, m.FD()), asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4), asm.FnMapLookupElem.Call(), asm.JEq.Imm(asm.R0, 0, "out"), asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord), asm.Mov.Imm(asm.R0, 0).WithSymbol("out"), asm.Return()}})
	if err != nil {
		return err
	}
	defer prog.Close()
	set, err := spanperf.OpenAll(spec, prog.FD(), spanperf.WithDeferredEnable())
	if err != nil {
		return err
	}
	t0 := time.Now()
	time.Sleep(time.Second)
	var n uint64
	m.Lookup(uint32(0), &n)
	el := time.Since(t0).Seconds()
	cpus := len(set.CPUs())
	set.Close()
	fmt.Printf("perfevent runs %d truth %.0f\n", n, float64(cpus)*100*el)
	return nil
}

func main() {
	seeds := map[string]func() error{"perf-utils": perfUtils, "perfevents": perfevents,
		"opentelemetry-perf": otelPerf, "perfevent": perfevent}
	if len(os.Args) != 2 || seeds[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: go-seeds perf-utils|perfevents|opentelemetry-perf|perfevent")
		os.Exit(1)
	}
	if err := seeds[os.Args[1]](); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
