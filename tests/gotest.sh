#!/bin/sh
# The Go binding (bindings/go/spanperf) against the real OpenTelemetry SDK,
# built as docs/library.md says: Debian's golang-go and golang-opentelemetry-otel-dev
# (tools/deps.sh test installs both) in GOPATH mode, which needs no module
# proxy.  Run by `make gotest`.
#
#   tests/gotest.sh              go vet, the tests, and the example builds
#   tests/gotest.sh -c OUT       only compile the test binary to OUT (make bench)
set -eu
cd "$(dirname "$0")/.."
out=build
sdk=/usr/share/gocode/src/go.opentelemetry.io/otel/sdk
if ! command -v go >/dev/null 2>&1; then
	echo "  SKIP  gotest: go is not installed (tools/deps.sh test installs golang-go)"
	exit 0
fi
if [ ! -d "$sdk" ]; then
	echo "  SKIP  gotest: the Go OpenTelemetry SDK is not installed (golang-opentelemetry-otel-dev)"
	exit 0
fi
# GOPATH mode wants the package under src/: a link to the tree's copy.
mkdir -p "$out/go/src"
ln -sfn "$(pwd)/bindings/go/spanperf" "$out/go/src/spanperf"
export PKG_CONFIG_PATH="$(pwd)/$out/lib" GO111MODULE=off GOFLAGS= \
	GOPATH="/usr/share/gocode:$(pwd)/$out/go" GOCACHE="$(pwd)/$out/go/cache"
if [ "${1:-}" = -c ]; then
	exec go test -c -o "$2" spanperf
fi
go vet spanperf
if ! res=$(go test -count=1 -v spanperf 2>&1); then
	printf '%s\n' "$res" | sed 's/^/        /'
	echo "  FAIL  gotest"
	exit 1
fi
printf '%s\n' "$res" | grep -E '^(---|    )' | sed 's/^/        /'
go build -o "$out/examples/go-spanperf" ./examples/go-spanperf
echo "  PASS  gotest ($(printf '%s\n' "$res" | grep -c '^--- PASS') Go tests; the example builds)"
