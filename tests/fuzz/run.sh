#!/bin/sh
# tests/fuzz/run.sh fuzz SECONDS TARGET...   run each target, from its seeds
# tests/fuzz/run.sh replay 0 TARGET...       run every seed and regression once
#
# Seeds live in tests/fuzz/corpus/NAME, inputs that once crashed a target in
# tests/fuzz/regressions/NAME: both are checked in and replayed by make test.
set -u
mode=$1
secs=$2
shift 2
cd "$(dirname "$0")/../.."
failed=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for t in "$@"; do
	name=$(basename "$t")
	seeds=tests/fuzz/corpus/$name
	regs=tests/fuzz/regressions/$name
	mkdir -p "$seeds" "$regs"
	if [ "$mode" = replay ]; then
		files=$(find "$seeds" "$regs" -type f | sort)
		if [ -z "$files" ]; then
			echo "  SKIP  $name: no seeds"
			continue
		fi
		# shellcheck disable=SC2086
		if "$t" $files > "build/fuzz/$name.replay.log" 2>&1; then
			echo "  PASS  $name ($(echo "$files" | wc -l) inputs replayed)"
		else
			echo "  FAIL  $name: see build/fuzz/$name.replay.log"
			failed=$((failed + 1))
		fi
		continue
	fi
	work=build/fuzz/corpus/$name
	crashes=build/fuzz/crashes/$name
	mkdir -p "$work" "$crashes"
	# A target's own libFuzzer flags: a "FUZZ_FLAGS: ..." line in its source.
	flags=$(sed -n 's/^.*FUZZ_FLAGS: //p' "tests/fuzz/$name.c" 2>/dev/null)
	echo "  FUZZ  $name for ${secs}s${flags:+ ($flags)}"
	# shellcheck disable=SC2086
	if ! "$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$crashes/" \
		-print_final_stats=1 $flags "$work" "$seeds" > "build/fuzz/$name.log" 2>&1; then
		echo "  CRASH $name: $(ls "$crashes" | head -3 | tr '\n' ' ')(see build/fuzz/$name.log)"
		failed=$((failed + 1))
	fi
	grep -E "stat::number_of_executed_units|cov:" "build/fuzz/$name.log" | tail -1 | sed 's/^/        /'
done
[ $failed -eq 0 ] || { echo "fuzz: $failed targets failed"; exit 1; }
