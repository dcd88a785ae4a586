#!/bin/sh
# The include rules of user/ (Makefile: INC_*) must bite: for each folder,
# a file there that includes a header of a folder it may not see must fail
# to compile, and one of a folder it may see must compile.  Run by `make unit`.
set -u
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0

# A header from each folder, to include.
hdr_base=util.h hdr_perfdata=perf_data.h hdr_sys=events.h hdr_record=counters.h
hdr_report=symbols.h hdr_live=stat_serve.h hdr_cmd=commands.h

# Prints the include flags the Makefile gives a file of folder $1.
flags() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $MAKE --no-print-directory -s -f Makefile -f - print-inc DIR="$1" <<'MK'
print-inc:
	@echo '$(call user_inc,$(DIR))'
MK
}

try() { # folder header expect(ok|fail)
	n=$((n + 1))
	printf '#include "%s"\nint layout_probe;\n' "$2" > "$tmp/probe.c"
	if ${CC:-cc} -D_GNU_SOURCE -fsyntax-only $(flags "$1") -Ibuild "$tmp/probe.c" 2>/dev/null; then got=ok; else got=fail; fi
	if [ "$got" != "$3" ]; then
		echo "  FAIL  layout: user/$1/ including $2 should $3 but did $got"
		fail=$((fail + 1))
	fi
}

# May see (ok) and may not (fail), as the Makefile states them.
for h in perf_data.h events.h counters.h symbols.h stat_serve.h commands.h; do try base $h fail; done
try perfdata util.h ok
for h in events.h counters.h symbols.h stat_serve.h commands.h; do try perfdata $h fail; done
try sys perf_data.h ok
for h in counters.h symbols.h stat_serve.h commands.h; do try sys $h fail; done
try record events.h ok
for h in symbols.h stat_serve.h commands.h; do try record $h fail; done
try report events.h ok
for h in counters.h stat_serve.h commands.h; do try report $h fail; done
# live sees record and report (it joins them while a recording runs), never cmd.
for h in events.h counters.h symbols.h; do try live $h ok; done
try live commands.h fail
for d in base perfdata sys record report live cmd; do eval "try cmd \$hdr_$d ok"; done

if [ $fail -eq 0 ]; then
	echo "  PASS  layout ($n include rules)"
else
	echo "  FAIL  layout: $fail of $n include rules broken"
fi

# No circle among user/'s files (tests/circles.py), over the objects built.
# First, that the check bites: a tree of two files that lead back to each
# other, once by their includes and once by their calls alone, must fail it.
circle_tree() { # name: a tree in $tmp/NAME whose a and b form a circle
	d=$tmp/$1
	mkdir -p "$d/user/base" "$d/build/base"
	printf 'int a_one(void);\n' > "$d/user/base/a.h"
	printf 'int b_two(void);\n' > "$d/user/base/b.h"
	if [ "$1" = includes ]; then
		printf '#include "a.h"\n#include "b.h"\nint a_one(void) { return 1; }\n' > "$d/user/base/a.c"
		printf '#include "a.h"\n#include "b.h"\nint b_two(void) { return 2; }\n' > "$d/user/base/b.c"
	else
		printf 'int b_two(void);\nint a_one(void) { return b_two(); }\n' > "$d/user/base/a.c"
		printf 'int a_one(void);\nint b_two(void) { return a_one(); }\n' > "$d/user/base/b.c"
	fi
	for f in a b; do ${CC:-cc} -c "$d/user/base/$f.c" -o "$d/build/base/$f.o" || return 1; done
}
for kind in includes calls; do
	if ! circle_tree $kind; then
		echo "  FAIL  circles: cannot build the circle of $kind to try the check on"
		fail=$((fail + 1))
	elif out=$(python3 tests/circles.py --root "$tmp/$kind") || ! echo "$out" | grep -q 'circle: user/base/a user/base/b'; then
		echo "  FAIL  circles: a circle of $kind was not found"
		fail=$((fail + 1))
	fi
done
python3 tests/circles.py || fail=$((fail + 1))
[ $fail -eq 0 ] || exit 1
