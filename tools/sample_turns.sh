#!/bin/bash
# The sampling program's parts (on_sample_eh, bpf/sample.bpf.c), costed by
# turns in one run: a recording at 4999 Hz with -g while LOAD runs, and for
# each mask of EH_COST_* in MASKS (bpf/ehframe.bpf.h) in turn, every other
# sample on each CPU goes without those parts (eh_cost_turns, set with
# bpftool; the recorder runs with SPANPERF_BENCH_TURNS=1, without which
# those parts are dropped at load).  Per mask, over SECS s: ns a sample
# from the program's start to its end with and without the parts, by the
# sample's mode (user, kernel),
# the user walk's ns and frames, and the kernel-mode share.  Medians come
# from running it again.
#
#   MASKS=64,1,2,4,8,16,32 SECS=6 tools/sample_turns.sh LOAD [ARG]...   whole host (-a)
#   ONLY=1 ... tools/sample_turns.sh LOAD [ARG]...                       LOAD alone (-p its pid)
#
# SPANPERF=PATH: another build's recorder.
# e.g. tools/sample_turns.sh tests/integration/workload spin 60000,60000
# (1 the -p/-t filter, 2 cookie/ktime/cpu, 4 kernel chain, 8 ring output,
# 16 user walk, 32 rule cache bypassed, 64 nothing: the method's noise,
# 128 and 256 a chain's first stack read capped at 256 bytes and 1 KiB).
# The maps are found by the recorder's own fds: other recorders on a shared
# host have maps of the same names.
set -u
cd "$(dirname "$0")/.."
MASKS=${MASKS:-64,1,2,4,8,16,32}
SECS=${SECS:-6}
"$@" > /dev/null &
LP=$!
sleep 0.3
if [ -n "${ONLY:-}" ]; then WHO="-p $LP"; else WHO=-a; fi
SPANPERF_BENCH_TURNS=1 ${SPANPERF:-./spanperf} record -q $WHO -g -F 4999 -d 600 -o /tmp/sample-turns.data &
RP=$!
trap 'kill $LP 2>/dev/null; kill -INT $RP 2>/dev/null; wait $RP 2>/dev/null; rm -f /tmp/sample-turns.data /tmp/sample-turns.data.old' EXIT
sleep 5

. "$(dirname "$0")/map_id.sh"

# eh_cost_cpus' ab[16], summed over the CPUs.
dump() {
	bpftool map dump id "$1" -j | python3 -c 'import json, sys
e = json.load(sys.stdin)[0]
print(json.dumps([sum(int(v["value"]["ab"][i]) for v in e["formatted"]["values"]) for i in range(16)]))'
}

T=$(id_of eh_cost_turns)
C=$(id_of eh_cost_cpus)
if [ -z "$T" ] || [ -z "$C" ]; then
	echo "sample_turns: the recorder's maps were not found (is it up, with -g?)" >&2
	exit 1
fi
for M in ${MASKS//,/ }; do
	bpftool map update id "$T" key 0 0 0 0 value $((M & 255)) $((M >> 8 & 255)) $((M >> 16 & 255)) $((M >> 24 & 255))
	sleep 1
	A0=$(dump "$C")
	sleep "$SECS"
	A1=$(dump "$C")
	python3 - "$M" "$A0" "$A1" <<'PY'
import json, sys
m, a0, a1 = int(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
d = [y - x for x, y in zip(a0, a1)]
def arm(t, u):
    b = t * 8 + u * 4
    n = max(d[b + 1], 1)
    return d[b] / n, d[b + 1], d[b + 2] / n, d[b + 3] / n
out = []
for u, name in ((1, "user"), (0, "kernel")):
    full, part = arm(0, u), arm(1, u)
    out.append("%s-mode %.0f ns (walk %.0f, %.1f frames; %d samples) without %.0f (walk %.0f): %+.0f"
               % (name, full[0], full[2], full[3], full[1], part[0], part[2], part[0] - full[0]))
k = d[1] + d[9]
share = k / max(k + d[5] + d[13], 1)
print("mask %d: %s; kernel-mode share %.1f%%" % (m, "; ".join(out), 100 * share))
PY
done
bpftool map update id "$T" key 0 0 0 0 value 0 0 0 0
