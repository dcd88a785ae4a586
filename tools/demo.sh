#!/bin/sh
# make demo: a short whole-host recording with call chains while a small
# load runs, then the top of spanperf's report and of perf's.
set -eu
cd "$(dirname "$0")/.."
out=${DEMO_OUT:-perf.data}
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: spanperf needs root (or CAP_BPF and CAP_PERFMON); run: sudo make demo" >&2
	exit 1
fi
echo "== spanperf record -g -d 4 -o $out   (whole host; a test load spins meanwhile)"
build/tests/workload spin 1500,2500 >/dev/null &
load=$!
./spanperf record -g -d 4 -o "$out"
wait $load || true
echo
echo "== spanperf report -i $out"
./spanperf report -i "$out" | head -20
echo
echo "== perf report --stdio -i $out  (perf reads the same file)"
perf report --stdio --no-children -g none --sort comm,dso,sym -i "$out" 2>/dev/null | grep -v '^#' | grep -v '^$' | head -15
echo
echo "Open it yourself: perf report -i $out"
