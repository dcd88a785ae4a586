#!/bin/sh
# The Go binding (bindings/go, module "spanperf") against the real things,
# as docs/library.md says: the core package (standard library only) in
# module mode with GOPROXY=off, as a consumer builds it; the OpenTelemetry
# processor (spanperf/otelperf), the OpenTracing wrapper (spanperf/otperf)
# and the sampler test with cilium/ebpf (spanperf/ebpftest) against Debian's
# packages in GOPATH mode, which needs no module proxy (tools/deps.sh test
# installs them).  Run by `make gotest`.
#
#   tests/gotest.sh              go vet, the tests, a module-mode consumer, the example builds
#   tests/gotest.sh -c OUT       only compile the core test binary to OUT and the
#                                OpenTelemetry processor's to OUT-otel (make bench)
set -eu
cd "$(dirname "$0")/.."
out=build
gocode=/usr/share/gocode/src
if ! command -v go >/dev/null 2>&1; then
	echo "  SKIP  gotest: go is not installed (tools/deps.sh test installs golang-go)"
	exit 0
fi
for d in go.opentelemetry.io/otel/sdk github.com/opentracing/basictracer-go github.com/cilium/ebpf; do
	if [ ! -d "$gocode/$d" ]; then
		echo "  SKIP  gotest: $d is not installed (tools/deps.sh test installs it)"
		exit 0
	fi
done
# GOPATH mode wants the module under src/: a link to the tree's copy.
mkdir -p "$out/go/src"
ln -sfn "$(pwd)/bindings/go" "$out/go/src/spanperf"
export PKG_CONFIG_PATH="$(pwd)/$out/lib" GOCACHE="$(pwd)/$out/go/cache"
gopath() { GO111MODULE=off GOFLAGS= GOPATH="/usr/share/gocode:$(pwd)/$out/go" "$@"; }
if [ "${1:-}" = -c ]; then
	case $2 in /*) bin=$2 ;; *) bin=$(pwd)/$2 ;; esac
	gopath go test -c -o "$bin-otel" spanperf/otelperf
	cd bindings/go && exec env GOFLAGS=-mod=mod GOPROXY=off go test -c -o "$bin" .
fi
pkgs="spanperf spanperf/otelperf spanperf/otperf spanperf/ebpftest"
gopath go vet $pkgs
if ! res=$(gopath go test -count=1 -v $pkgs 2>&1); then
	printf '%s\n' "$res" | sed 's/^/        /'
	echo "  FAIL  gotest"
	exit 1
fi
printf '%s\n' "$res" | grep -E '^(---|    |ok)' | sed 's/^/        /'

# A consumer of the core package in module mode, no network: go.mod's replace is all it needs.
app="$out/go/consumer"
rm -rf "$app" && mkdir -p "$app"
cat >"$app/go.mod" <<MOD
module example.com/consumer

go 1.19

require spanperf v0.0.0

replace spanperf => $(pwd)/bindings/go
MOD
cat >"$app/main.go" <<'SRC'
package main

import (
	"fmt"

	"spanperf"
)

func main() {
	v, err := spanperf.Measure("task-clock", func() {})
	fmt.Println(v, err)
}
SRC
if ! (cd "$app" && GOFLAGS=-mod=mod GOPROXY=off GONOSUMDB=* GOFLAGS=-mod=mod go build -o consumer . 2>&1); then
	echo "  FAIL  gotest: a module-mode consumer of the core package does not build with GOPROXY=off"
	exit 1
fi
"$app/consumer" >/dev/null

mkdir -p "$out/examples"
gopath go build -o "$out/examples/go-spanperf" ./examples/go-spanperf
gopath go build -o "$out/examples/go-seeds" ./examples/go-seeds
echo "  PASS  gotest ($(printf '%s\n' "$res" | grep -c '^--- PASS') Go tests; a module-mode consumer and the examples build)"
