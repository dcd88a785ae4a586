#!/bin/sh
# make check: fails if any process of the sanitized run left a report in DIR.
set -eu
dir=$1
n=$(find "$dir" -type f | wc -l)
if [ "$n" -eq 0 ]; then
	echo "sanitizers: no reports"
	exit 0
fi
for f in $(find "$dir" -type f | head -5); do
	echo "== $f"
	head -40 "$f"
done
echo "sanitizers: $n reports in $dir (first ones above)"
exit 1
