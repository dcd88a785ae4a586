#!/bin/sh
# Installs the Debian 12 packages spanperf needs that are missing, and
# nothing when all are present.  Usage: tools/deps.sh [build|test|browser|vm|bench]...
# (default: build and test).  Needs root (or sudo) only when it installs.
set -eu

build="make gcc clang llvm libbpf-dev bpftool libelf-dev libdw-dev libdebuginfod-dev zlib1g-dev pkg-config libmicrohttpd-dev libncurses-dev libyaml-dev libcrypt-dev libxxhash-dev"
# libcurl: spanperf agent ships windows to ClickHouse, report --clickhouse reads them.
build="$build libcurl4-openssl-dev"
# python3: the man pages spanperf carries (spanperf help) are made from docs/ by tools/md2man.py.
build="$build python3"
# Go and the pprof sources: the tests check profiles with the real pprof tool.
test="libcmocka-dev linux-perf python3 binutils libxml2-utils golang-go golang-github-google-pprof-dev libclang-rt-14-dev valgrind"
# debuginfod: a real server on loopback serves the tests' split debug files.
test="$test debuginfod"
# stat --serve is scraped by the real Prometheus (checked by its promtool); top runs under tmux.
test="$test prometheus tmux"
# The docs check renders every man page with groff (tests/docs.py).
test="$test groff-base"
# The fleet tests start their own ClickHouse servers (Debian's 18.16) on loopback.
test="$test clickhouse-server clickhouse-client"
# The OpenTelemetry tests run the real Node SDK from npm.  Debian's npm only
# where npm is missing: a nodejs from elsewhere may bundle its own.
test="$test nodejs"
# libspanperf's Go binding is tested against Debian's Go OpenTelemetry SDK (GOPATH mode).
test="$test golang-opentelemetry-otel-dev"
# ...its OpenTracing wrapper against Debian's opentracing-go and basictracer-go, its samplers with cilium/ebpf.
test="$test golang-github-opentracing-opentracing-go-dev golang-github-opentracing-basictracer-go-dev golang-github-cilium-ebpf-dev"
command -v npm >/dev/null 2>&1 || test="$test npm"
# The page tests: Debian's chromium, driven headless by playwright-core from
# npm (the tests install it and speedscope into build/browser-node; never
# `npx playwright install`).  Only make test needs them, not make demo.
browser="chromium nodejs"
command -v npm >/dev/null 2>&1 || browser="$browser npm"
vm="qemu-system-x86 busybox-static cpio"
# PAPI: the peer of libspanperf's counter reads.
bench="bpftrace linux-perf libpapi-dev papi-tools"

want=""
[ $# -eq 0 ] && set -- build test
for profile in "$@"; do
	case $profile in
	build) want="$want $build" ;;
	test) want="$want $build $test" ;;
	browser) want="$want $browser" ;;
	vm) want="$want $vm" ;;
	bench) want="$want $bench" ;;
	*) echo "deps.sh: unknown profile '$profile' (build, test, browser, vm, bench)" >&2; exit 1 ;;
	esac
done

missing=""
for p in $want; do
	case " $missing " in *" $p "*) continue ;; esac
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$status" = "install ok installed" ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		echo "deps.sh: missing packages:$missing; run as root to install them" >&2
		exit 1
	fi
else
	SUDO=
fi
echo "deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet; update only when needed.
if ! $SUDO apt-get install -y --no-install-recommends $missing >/tmp/spanperf-apt.log 2>&1; then
	$SUDO apt-get update >>/tmp/spanperf-apt.log 2>&1 || true
	if ! $SUDO apt-get install -y --no-install-recommends $missing >>/tmp/spanperf-apt.log 2>&1; then
		echo "deps.sh: apt-get could not install$missing; see /tmp/spanperf-apt.log" >&2
		tail -5 /tmp/spanperf-apt.log >&2
		exit 1
	fi
fi
