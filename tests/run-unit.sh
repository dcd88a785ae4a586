#!/bin/sh
# Runs each cmocka binary; prints one line per binary and fails if any fails.
failed=0
skipped=0
passed=0
cases=0
for t in "$@"; do
	if out=$("$t" 2>&1); then
		n=$(printf '%s\n' "$out" | grep -c '^\[       OK \]')
		echo "  PASS  $(basename "$t") ($n cases)"
		passed=$((passed + 1))
		cases=$((cases + n))
		# A case that cannot run here says why (a line "SKIP: why") and is counted as skipped.
		printf '%s\n' "$out" | grep '^SKIP: ' | sed "s/^SKIP: /  SKIP  $(basename "$t"): /"
		skipped=$((skipped + $(printf '%s\n' "$out" | grep '^\[  SKIPPED \]' | grep -v 'test(s)' | sort -u | wc -l)))
	else
		echo "  FAIL  $(basename "$t")"
		printf '%s\n' "$out" | grep -E 'FAIL|ERROR|error|Assert|\.c:[0-9]+' | head -20 | sed 's/^/        /'
		failed=$((failed + 1))
	fi
done
echo "unit: $passed binaries passed ($cases cases), $failed failed, $skipped cases skipped"
[ $failed -eq 0 ] || { echo "unit: $failed binaries failed"; exit 1; }
