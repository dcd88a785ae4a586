// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

package spanperf

// Named profiles (perf-utils' HardwareProfile, SoftwareProfile and
// CacheProfile): a field per generic event, nil where this machine cannot
// count it, so that a VM with no PMU still gives the rest.

// HardwareProfile holds the generic hardware events.
type HardwareProfile struct {
	CPUCycles, Instructions, CacheRefs, CacheMisses, BranchInstr, BranchMisses, BusCycles *uint64
	StalledCyclesFrontend, StalledCyclesBackend, RefCPUCycles                             *uint64
	TimeEnabled, TimeRunning                                                              *uint64
}

// SoftwareProfile holds the software events (clocks in ns).
type SoftwareProfile struct {
	CPUClock, TaskClock, PageFaults, ContextSwitches, CPUMigrations    *uint64
	MinorPageFaults, MajorPageFaults, AlignmentFaults, EmulationFaults *uint64
	TimeEnabled, TimeRunning                                           *uint64
}

// CacheProfile holds the generic cache events.
type CacheProfile struct {
	L1DataReadHit, L1DataReadMiss, L1DataWriteHit, L1InstrReadMiss             *uint64
	LastLevelReadHit, LastLevelReadMiss, LastLevelWriteHit, LastLevelWriteMiss *uint64
	DataTLBReadHit, DataTLBReadMiss, InstrTLBReadHit, InstrTLBReadMiss         *uint64
	BPUReadHit, BPUReadMiss                                                    *uint64
	TimeEnabled, TimeRunning                                                   *uint64
}

type field[T any] struct {
	event string
	at    func(*T) **uint64
}

var hardwareFields = []field[HardwareProfile]{
	{"cpu-cycles", func(p *HardwareProfile) **uint64 { return &p.CPUCycles }},
	{"instructions", func(p *HardwareProfile) **uint64 { return &p.Instructions }},
	{"cache-references", func(p *HardwareProfile) **uint64 { return &p.CacheRefs }},
	{"cache-misses", func(p *HardwareProfile) **uint64 { return &p.CacheMisses }},
	{"branch-instructions", func(p *HardwareProfile) **uint64 { return &p.BranchInstr }},
	{"branch-misses", func(p *HardwareProfile) **uint64 { return &p.BranchMisses }},
	{"bus-cycles", func(p *HardwareProfile) **uint64 { return &p.BusCycles }},
	{"stalled-cycles-frontend", func(p *HardwareProfile) **uint64 { return &p.StalledCyclesFrontend }},
	{"stalled-cycles-backend", func(p *HardwareProfile) **uint64 { return &p.StalledCyclesBackend }},
	{"ref-cycles", func(p *HardwareProfile) **uint64 { return &p.RefCPUCycles }},
}

var softwareFields = []field[SoftwareProfile]{
	{"cpu-clock", func(p *SoftwareProfile) **uint64 { return &p.CPUClock }},
	{"task-clock", func(p *SoftwareProfile) **uint64 { return &p.TaskClock }},
	{"page-faults", func(p *SoftwareProfile) **uint64 { return &p.PageFaults }},
	{"context-switches", func(p *SoftwareProfile) **uint64 { return &p.ContextSwitches }},
	{"cpu-migrations", func(p *SoftwareProfile) **uint64 { return &p.CPUMigrations }},
	{"minor-faults", func(p *SoftwareProfile) **uint64 { return &p.MinorPageFaults }},
	{"major-faults", func(p *SoftwareProfile) **uint64 { return &p.MajorPageFaults }},
	{"alignment-faults", func(p *SoftwareProfile) **uint64 { return &p.AlignmentFaults }},
	{"emulation-faults", func(p *SoftwareProfile) **uint64 { return &p.EmulationFaults }},
}

var cacheFields = []field[CacheProfile]{
	{"L1-dcache-loads", func(p *CacheProfile) **uint64 { return &p.L1DataReadHit }},
	{"L1-dcache-load-misses", func(p *CacheProfile) **uint64 { return &p.L1DataReadMiss }},
	{"L1-dcache-stores", func(p *CacheProfile) **uint64 { return &p.L1DataWriteHit }},
	{"L1-icache-load-misses", func(p *CacheProfile) **uint64 { return &p.L1InstrReadMiss }},
	{"LLC-loads", func(p *CacheProfile) **uint64 { return &p.LastLevelReadHit }},
	{"LLC-load-misses", func(p *CacheProfile) **uint64 { return &p.LastLevelReadMiss }},
	{"LLC-stores", func(p *CacheProfile) **uint64 { return &p.LastLevelWriteHit }},
	{"LLC-store-misses", func(p *CacheProfile) **uint64 { return &p.LastLevelWriteMiss }},
	{"dTLB-loads", func(p *CacheProfile) **uint64 { return &p.DataTLBReadHit }},
	{"dTLB-load-misses", func(p *CacheProfile) **uint64 { return &p.DataTLBReadMiss }},
	{"iTLB-loads", func(p *CacheProfile) **uint64 { return &p.InstrTLBReadHit }},
	{"iTLB-load-misses", func(p *CacheProfile) **uint64 { return &p.InstrTLBReadMiss }},
	{"branch-loads", func(p *CacheProfile) **uint64 { return &p.BPUReadHit }},
	{"branch-load-misses", func(p *CacheProfile) **uint64 { return &p.BPUReadMiss }},
}

// Profiler counts one named profile's events on a target (pid 0 with cpu -1:
// the calling goroutine's thread, which it locks until Close), with Start,
// Stop, Reset and Profile as perf-utils' profilers.
type Profiler[T any] struct {
	c      *Counters
	fields []field[T]
	vals   []Value
	times  func(*T) (**uint64, **uint64)
}

func newProfiler[T any](fields []field[T], times func(*T) (**uint64, **uint64), pid, cpu int) (*Profiler[T], error) {
	ev := ""
	for i, f := range fields {
		if i > 0 {
			ev += ","
		}
		ev += f.event
	}
	c, err := open(ev, SkipUncountable, pid, cpu)
	if err != nil {
		return nil, err
	}
	return &Profiler[T]{c: c, fields: fields, times: times}, nil
}

// NewHardwareProfiler counts the generic hardware events.
func NewHardwareProfiler(pid, cpu int) (*Profiler[HardwareProfile], error) {
	return newProfiler(hardwareFields, func(p *HardwareProfile) (**uint64, **uint64) { return &p.TimeEnabled, &p.TimeRunning }, pid, cpu)
}

// NewSoftwareProfiler counts the software events.
func NewSoftwareProfiler(pid, cpu int) (*Profiler[SoftwareProfile], error) {
	return newProfiler(softwareFields, func(p *SoftwareProfile) (**uint64, **uint64) { return &p.TimeEnabled, &p.TimeRunning }, pid, cpu)
}

// NewCacheProfiler counts the generic cache events.
func NewCacheProfiler(pid, cpu int) (*Profiler[CacheProfile], error) {
	return newProfiler(cacheFields, func(p *CacheProfile) (**uint64, **uint64) { return &p.TimeEnabled, &p.TimeRunning }, pid, cpu)
}

// Start enables counting; Stop disables it; Reset zeroes the counts.
func (p *Profiler[T]) Start() error { return p.c.Enable() }
func (p *Profiler[T]) Stop() error  { return p.c.Disable() }
func (p *Profiler[T]) Reset() error { return p.c.Reset() }

// Unavailable maps the profile's events this machine cannot count to why.
func (p *Profiler[T]) Unavailable() map[string]string { return p.c.Unavailable() }

// Profile reads every event: a field is nil where the event cannot be counted.
func (p *Profiler[T]) Profile() (*T, error) {
	vals, err := p.c.ReadValues()
	if err != nil {
		return nil, err
	}
	out := new(T)
	var enabled, running uint64
	for i, f := range p.fields {
		if p.c.why[i] != "" {
			continue
		}
		v := vals[i].Value
		*f.at(out) = &v
		if vals[i].TimeEnabled > enabled {
			enabled, running = vals[i].TimeEnabled, vals[i].TimeRunning
		}
	}
	te, tr := p.times(out)
	*te, *tr = &enabled, &running
	return out, nil
}

// Close releases the events (and the thread).
func (p *Profiler[T]) Close() error { p.c.Close(); return nil }
