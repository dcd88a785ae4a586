#!/bin/sh
# make check's last step: the report paths once under valgrind, which must
# find no errors and no leaks (definite or indirect).
set -eu
cd "$(dirname "$0")/.."
# Not the ASan build of make check: valgrind cannot run a sanitized binary.
bin=${SPANPERF_BIN:-./spanperf}
[ -x build/bench/gen_spans ] || make --no-print-directory build/bench/gen_spans >/dev/null
command -v valgrind >/dev/null || { echo "valgrind: skipped: valgrind is not installed"; exit 0; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
build/bench/gen_spans "$d/g.data" 2000 200 4
# A real recording with call chains and spans too, where BPF may load (report --spans of a file
# without spans is an error, exit 1, which would test only that).
"$bin" record -q -g --span "uprobe:$PWD/build/tests/workload:hidden_work" -o "$d/r.data" -- \
	build/tests/workload calls 20 2 "$d/ext.jsonl" > /dev/null 2>&1 ||
	cp "$d/g.data" "$d/r.data"
[ -s "$d/ext.jsonl" ] || echo '{"tid":1000,"start_ns":1,"end_ns":999999999}' > "$d/ext.jsonl"
printf 'PERFILE2 not really' > "$d/bad.data"
# vg [-x STATUS] ARGS...: spanperf ARGS under valgrind, which must exit STATUS (0 unless said):
# a crash or a sanitizer-like abort is a failure too, not only valgrind's own errors.
vg() {
	want=0
	[ "$1" != -x ] || { want=$2; shift 2; }
	rc=0
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
		--show-leak-kinds=definite,indirect "$bin" "$@" > "$d/out" 2> "$d/vg" || rc=$?
	if [ $rc -ne "$want" ]; then
		echo "  FAIL  valgrind: spanperf $* (exit $rc$([ $rc -ne 99 ] || echo ": valgrind's errors"), not $want)"
		sed 's/^/        /' "$d/vg" | head -30
		exit 1
	fi
	echo "  PASS  valgrind: spanperf $*"
	passed=$((passed + 1))
}
passed=0
vg report -i "$d/r.data"
vg report -i "$d/r.data" -g --sort tid,sym
vg report -i "$d/r.data" --folded
vg report -i "$d/r.data" --flamegraph "$d/f.svg" --pprof "$d/p.pb.gz"
vg report -i "$d/r.data" --spans --format json
vg report -i "$d/g.data" --spans
vg annotate --spans "$d/ext.jsonl" -i "$d/r.data" --format json
vg report -i "$d/g.data" --folded --span-prefix
vg annotate --spans "$d/ext.jsonl" -i "$d/r.data" --format folded
vg annotate --spans "$d/ext.jsonl" -i "$d/r.data" --format otlp-json
vg -x 1 report -i "$d/bad.data"
echo "valgrind: $passed passed"
