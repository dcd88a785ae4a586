// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

package spanperf

/*
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>

static int sp_go_bind(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"
)

// Pool runs functions on worker goroutines locked to OS threads and bound to
// CPUs (opentelemetry-perf's PoolManager), each call a span with counters:
// the counters then count the call's own work, whatever the Go scheduler does.
type Pool struct {
	jobs   chan job
	wg     sync.WaitGroup
	mu     sync.RWMutex // Call sends under the read side: Close never closes jobs under a sender
	closed bool
	Events string // the spans' events ("": SPANPERF_EVENTS, else the default)
}

type job struct {
	ctx  context.Context
	name string
	fn   func(context.Context)
	done chan result
}

type result struct {
	span *Span
	err  error
}

// ErrPoolClosed is returned by calls after Close.
var ErrPoolClosed = errors.New("spanperf: the pool is closed")

// NewPool starts workers goroutines, worker i locked to its thread and bound
// to cpus[i % len(cpus)] (cpus empty: unbound).  A CPU the thread cannot be
// bound to is an error, and no worker is left running.
func NewPool(workers int, cpus []int) (*Pool, error) {
	if workers < 1 {
		return nil, fmt.Errorf("spanperf: a pool needs at least 1 worker, not %d", workers)
	}
	p := &Pool{jobs: make(chan job)}
	ready := make(chan error, workers)
	for i := 0; i < workers; i++ {
		cpu := -1
		if len(cpus) > 0 {
			cpu = cpus[i%len(cpus)]
		}
		p.wg.Add(1)
		go p.worker(cpu, ready)
	}
	var first error
	for i := 0; i < workers; i++ {
		if err := <-ready; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		p.Close()
		return nil, first
	}
	return p, nil
}

func (p *Pool) worker(cpu int, ready chan<- error) {
	defer p.wg.Done()
	// Never unlocked: a thread whose affinity was changed goes away with its goroutine.
	runtime.LockOSThread()
	if cpu >= 0 {
		if r := C.sp_go_bind(C.int(cpu)); r != 0 {
			ready <- &Error{Errno: syscall.Errno(-r), Msg: fmt.Sprintf("spanperf: a pool worker cannot be bound to CPU %d: %v", cpu, syscall.Errno(-r))}
			return
		}
	}
	ready <- nil
	for j := range p.jobs {
		if err := SpanBegin(j.name, p.Events); err != nil {
			j.fn(j.ctx)
			j.done <- result{nil, err}
			continue
		}
		j.fn(j.ctx)
		s, err := SpanEnd()
		j.done <- result{s, err}
	}
}

// Call runs fn(ctx) on a worker as a span named name and returns the span
// with its counters.  It waits for fn; ctx ending first returns ctx.Err().
func (p *Pool) Call(ctx context.Context, name string, fn func(context.Context)) (*Span, error) {
	j := job{ctx, name, fn, make(chan result, 1)}
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return nil, ErrPoolClosed
	}
	select {
	case p.jobs <- j:
	case <-ctx.Done():
		p.mu.RUnlock()
		return nil, ctx.Err()
	}
	p.mu.RUnlock()
	r := <-j.done
	return r.span, r.err
}

// Pool returns fn as a function that, when called, runs on a worker
// (opentelemetry-perf's Poolable).
func (p *Pool) Pool(name string, fn func(context.Context)) func(context.Context) {
	return func(ctx context.Context) { p.Call(ctx, name, fn) }
}

// Close stops the workers once their calls are done.
func (p *Pool) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.jobs)
	}
	p.mu.Unlock()
	p.wg.Wait()
}
