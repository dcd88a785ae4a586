#!/bin/bash
# The tail cache's cost by turns in one run (issue 40, bpf/ehkeep.bpf.h): a
# recording at 4999 Hz with -g while LOAD runs, the eh_keep_turns map set
# with bpftool once it is up, so that every other chain on each CPU goes
# without the cache; then each kind's ns a chain (ktime around the walk),
# the chains with a kept tail and the proofs that failed, over 7 s.  Only
# chains the cache may serve count (not Java, or a process whose
# mappings are not read yet).
#
#   tools/ehkeep_turns.sh LOAD [ARG]...     whole host (-a)
#   ONLY=1 tools/ehkeep_turns.sh LOAD ...   LOAD alone (-p its pid)
#
# e.g. ONLY=1 tools/ehkeep_turns.sh build/bench/unitwork_fp 2 24 2000000 30
# The maps are found by the recorder's own fds, not by name: other
# recorders on a shared host have maps of the same names.
set -u
cd "$(dirname "$0")/.."
"$@" > /dev/null &
LP=$!
sleep 0.3
if [ -n "${ONLY:-}" ]; then WHO="-p $LP"; else WHO=-a; fi
./spanperf record -q $WHO -g -F 4999 -d 20 -o /tmp/ehkeep-turns.data &
RP=$!
trap 'kill $LP 2>/dev/null; wait $RP 2>/dev/null; rm -f /tmp/ehkeep-turns.data /tmp/ehkeep-turns.data.old' EXIT
sleep 5

. "$(dirname "$0")/map_id.sh"

dump() {
	bpftool map dump id "$1" -j | python3 -c 'import json, sys
print(json.dumps([sum(int(v["value"]) for v in e["formatted"]["values"]) for e in json.load(sys.stdin)]))'
}

T=$(id_of eh_keep_turns)
AB=$(id_of eh_keep_ab)
ST=$(id_of eh_stats)
if [ -z "$T" ] || [ -z "$AB" ] || [ -z "$ST" ]; then
	echo "ehkeep_turns: the recorder's maps were not found (is it up, with -g?)" >&2
	exit 1
fi
bpftool map update id "$T" key 0 0 0 0 value 1 0 0 0
sleep 1
A0=$(dump "$AB")
S0=$(dump "$ST")
sleep 7
A1=$(dump "$AB")
S1=$(dump "$ST")
python3 - "$A0" "$A1" "$S0" "$S1" <<'PY'
import json, sys
a0, a1, s0, s1 = [json.loads(x) for x in sys.argv[1:5]]
d = [y - x for x, y in zip(a0, a1)]
s = [y - x for x, y in zip(s0, s1)]
off, on = d[0] / max(d[1], 1), d[2] / max(d[3], 1)
# eh_stats: SP_EH_CHAINS first, SP_EH_FRAMES 17th, SP_EH_KEPT and SP_EH_KEPT_FRAMES last (spanperf_abi.h)
print("walk ns a chain: without the cache %.0f (%d chains), with %.0f (%d chains): %.2f; proofs failed %d"
      % (off, d[1], on, d[3], on / off if off else 0, d[4]))
print("all chains %d, %.1f frames each; %d with a kept tail (%.0f%% of those with the cache), %d frames taken"
      % (s[0], s[17] / max(s[0], 1), s[-2], 100.0 * s[-2] / max(d[3], 1), s[-1]))
PY
