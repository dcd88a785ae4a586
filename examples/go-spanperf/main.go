// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0

// An OpenTelemetry program whose spans carry what they cost their thread.
//
//	make lib && make install PREFIX=$HOME/.local
//	export PKG_CONFIG_PATH=$HOME/.local/lib/pkgconfig
//	mkdir -p $HOME/go/src && ln -s $PWD/bindings/go $HOME/go/src/spanperf
//	GO111MODULE=off GOPATH=/usr/share/gocode:$HOME/go GOFLAGS= go run ./examples/go-spanperf
package main

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"spanperf"
	"spanperf/otelperf"
)

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func main() {
	// Counters around one function.
	v, err := spanperf.Measure("task-clock,page-faults", func() { fib(30) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("fib(30): %.3f ms task-clock, %d page faults\n", float64(v[0])/1e6, v[1])

	// Every span gets perf.task_clock_ms, perf.context_switches, perf.page_faults.
	exp := tracetest.NewInMemoryExporter()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(otelperf.NewSpanProcessor(trace.NewSimpleSpanProcessor(exp))))
	defer tp.Shutdown(context.Background())
	_, span := tp.Tracer("example").Start(context.Background(), "fib")
	fib(32)
	span.End()
	for _, s := range exp.GetSpans() {
		for _, a := range s.Attributes {
			fmt.Printf("%s %s=%s\n", s.Name, a.Key, a.Value.Emit())
		}
	}
}
