#!/bin/sh
# make demo: a short whole-host recording with call chains while a small
# load runs, then one of a command alone (as perf record -- CMD) beside
# another load, and the top of spanperf's report and of perf's.
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
# -- CMD: the command and what it forks or execs, as perf records it; -a -- CMD would be the whole host.
cmd_out="$out.cmd"
echo "== spanperf record -g -o $cmd_out -- sh -c '...'   (the command's processes only; a load spins beside it)"
build/tests/workload spin 3000 >/dev/null &
load=$!
./spanperf record -g -o "$cmd_out" -- sh -c 'build/tests/workload spin 600 >/dev/null; exec build/tests/workload forkspin 2 400 >/dev/null'
wait $load || true
echo
echo "== spanperf report -i $cmd_out --sort comm,pid   (sh, then the workloads it forked and exec'd; not the load)"
./spanperf report -i "$cmd_out" --sort comm,pid | head -12
echo
echo "Open them yourself: perf report -i $out; perf report -i $cmd_out"
