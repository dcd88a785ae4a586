// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

// Package ebpftest runs the core package's samplers with a program loaded
// by Debian's cilium/ebpf, as perfevent's callers load theirs.  Tests only:
// the core package itself needs nothing but the standard library.
package ebpftest

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"spanperf"
)

// counter loads a perf_event program that adds 1 to map[0] each run.
func counter(t *testing.T) (*ebpf.Program, *ebpf.Map) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.PerfEvent,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.StoreImm(asm.RFP, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
			asm.Return(),
		},
	})
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	return prog, m
}

func runs(t *testing.T, m *ebpf.Map) uint64 {
	var v uint64
	if err := m.Lookup(uint32(0), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func fds() int {
	d, _ := os.ReadDir("/proc/self/fd")
	return len(d)
}

// perfevent's use: probe, open on every CPU with the program, deferred enable; CPUs x Hz x seconds runs.
func TestOpenAllWithCiliumProgram(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("sampling every CPU and loading BPF need root")
	}
	prog, m := counter(t)
	defer prog.Close()
	defer m.Close()
	spec, err := spanperf.ProbeHardwareCycles(200)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("spec %+v", spec)
	set, err := spanperf.OpenAll(spec, prog.FD(), spanperf.WithDeferredEnable())
	if err != nil {
		t.Fatal(err)
	}
	if len(set.CPUs()) != runtime.NumCPU() {
		t.Errorf("opened on %v, %d CPUs online", set.CPUs(), runtime.NumCPU())
	}
	// Every CPU busy while the runs are counted: on an idle VM here a CPU's cpu-clock timer
	// does not fire (perf record -a -F 200 -e cpu-clock: 398 samples on CPU 0, 1 on CPU 1).
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < runtime.NumCPU(); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			for x := 0; !stop.Load(); x++ {
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	t0 := time.Now()
	r0 := runs(t, m)
	time.Sleep(2 * time.Second)
	n := runs(t, m) - r0
	want := float64(len(set.CPUs())) * 200 * time.Since(t0).Seconds()
	stop.Store(true)
	wg.Wait()
	set.Close()
	set.Close()
	t.Logf("%d runs, %.0f expected", n, want)
	if float64(n) < 0.9*want || float64(n) > 1.1*want {
		t.Errorf("%d runs for %.0f (CPUs x Hz x seconds)", n, want)
	}
	// A failure mid-way leaves no descriptor.
	before := fds()
	if _, err := spanperf.OpenAll(spec, prog.FD(), spanperf.WithCPUs(0, 4095)); err == nil {
		t.Error("CPU 4095 opened")
	} else {
		t.Log(err)
	}
	if fds() != before {
		t.Errorf("%d descriptors before a failed OpenAll, %d after", before, fds())
	}
}
