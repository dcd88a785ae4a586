#!/bin/sh
# Runs inside the QEMU guest (Debian's kernel) as PID 1's child: the span
# paths this project's own kernel cannot run (kprobe, fentry), and every
# BPF object loading CO-RE-relocated on an older kernel.  Prints one line
# per case and ends with "N passed, N failed".
pass=0
fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
ko() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
# record -v's count of frame-pointer steps taken because it had not read yet what the walk met
# (a file without its table, a process whose mappings it did not know): the bound on chains cut
# before the read.  Emulated under a busy host, the read came late: 7 of 67 cut, 75 such steps.
unread_steps() {
	grep -E '^  frame-pointer steps: (file without a table|process mappings not known yet) ' "$1" |
		awk '{ s += $NF } END { print s + 0 }'
}
# n chains, m reaching main: all but a tenth, or all but those walked before the read.
reach_main() {
	[ "$1" -ge 30 ] && [ "$2" -ge 20 ] &&
		{ [ $(($2 * 100)) -ge $(($1 * 90)) ] || [ $(($1 - $2)) -le $(($1 / 10 + $3)) ]; }
}
S=/spanperf
W=/workload

# $1 case, $2 spec, $3 expected source, $4 more record flags
span_case() {
	rm -f /tmp/k.data
	# shellcheck disable=SC2086
	if ! $S record -q ${4:-} --span "$2" -o /tmp/k.data -- $W reads 200 > /tmp/wl.json 2> /tmp/err.txt; then
		ko "$1" "record failed: $(tail -1 /tmp/err.txt)"
		return
	fi
	tid=$(sed 's/.*"tid":\([0-9]*\).*/\1/' /tmp/wl.json)
	$S report -i /tmp/k.data --spans --format json > /tmp/spans.json 2> /tmp/err.txt ||
		{ ko "$1" "report failed: $(tail -1 /tmp/err.txt)"; return; }
	n=$(grep -c "\"source\":\"$3\",\"pid\":[0-9]*,\"tid\":$tid," /tmp/spans.json)
	# 200 reads, plus the few of the thread's start-up at most.
	if [ "$n" -ge 200 ] && [ "$n" -le 210 ]; then
		ok "$1 ($n $3 spans for 200 reads)"
	else
		ko "$1" "$n $3 spans for 200 reads; $(head -c 300 /tmp/spans.json)"
	fi
}

echo "kernel: $(uname -r)"
$S probe > /tmp/probe.txt 2>&1
grep -q "kprobes  *yes" /tmp/probe.txt && grep -q "fentry/fexit  *yes" /tmp/probe.txt &&
	ok "probe finds kprobes and fentry" || ko "probe finds kprobes and fentry" "$(cat /tmp/probe.txt)"

# Every BPF object, CO-RE-relocated on this kernel.
$S record -q -g -d 1 -o /tmp/r.data 2> /tmp/err.txt && $S report -i /tmp/r.data > /tmp/rep.txt &&
	grep -q "^# Samples: [1-9]" /tmp/rep.txt && ok "sample.bpf loads and records" ||
	ko "sample.bpf loads and records" "$(tail -2 /tmp/err.txt)"
# The same object relocated against a cut of this kernel's BTF (min_btf.c), then from the cache:
# libbpf patches every instruction as against the whole BTF (6.1's offsets are not vmlinux.h's),
# and the fork and target hooks load as their raw_tp twins.
btf_relos() { grep -E 'patched insn|substituting insn' "$1" | grep -v -e 'fork_' -e 'exit_' | sed 's/relo #[0-9]*: //' | sort; }
mkdir -p -m 700 /tmp/xdg
XDG_CACHE_HOME=/tmp/xdg $S record -vv -g -o /tmp/c1.data -- $W forkspin 2 200 > /dev/null 2> /tmp/cut1.txt
XDG_CACHE_HOME=/tmp/xdg $S record -vv -g -o /tmp/c2.data -- $W forkspin 2 200 > /dev/null 2> /tmp/cut2.txt
SPANPERF_NO_BTF_CACHE=1 $S record -vv -g -o /tmp/c3.data -- $W forkspin 2 200 > /dev/null 2> /tmp/cut3.txt
btf_relos /tmp/cut2.txt > /tmp/relo2.txt
btf_relos /tmp/cut3.txt > /tmp/relo3.txt
if grep -q "cut of the kernel's BTF (cut and kept)" /tmp/cut1.txt && grep -q "cut of the kernel's BTF (cached)" /tmp/cut2.txt &&
	grep -q "program target_fork_raw:" /tmp/cut2.txt && grep -q "program eh_fork_raw:" /tmp/cut2.txt &&
	[ -s /tmp/relo2.txt ] && cmp -s /tmp/relo2.txt /tmp/relo3.txt &&
	[ "$($S report -i /tmp/c2.data --folded 2> /dev/null | grep -c ';main;mode_forkspin;forked_spin;')" -gt 0 ]; then
	ok "sample.bpf relocated against a cut of the kernel's BTF as against the whole ($(wc -l < /tmp/relo2.txt) insns)"
else
	ko "sample.bpf relocated against a cut of the kernel's BTF" "$(grep -h "kernel's" /tmp/cut1.txt /tmp/cut2.txt | tr '\n' ';') $(diff /tmp/relo2.txt /tmp/relo3.txt | head -5 | tr '\n' ';') $(grep -v '^libbpf' /tmp/cut2.txt | tail -2)"
fi
$S stat -e task-clock,context-switches,page-faults -o /tmp/s.txt -- $W sleeps 20 1000 > /dev/null 2> /tmp/err.txt &&
	grep -q "context-switches" /tmp/s.txt && ok "counters.bpf (tp_btf) loads and counts" ||
	ko "counters.bpf (tp_btf) loads and counts" "$(tail -2 /tmp/err.txt)"
$S stat --raw-tp -e task-clock,page-faults -o /tmp/s.txt -- $W pages 1000 > /dev/null 2> /tmp/err.txt &&
	grep -q "page-faults" /tmp/s.txt && ok "counters.bpf (raw_tp twin) loads and counts" ||
	ko "counters.bpf (raw_tp twin) loads and counts" "$(tail -2 /tmp/err.txt)"

# offcpu.bpf on both hooks; 6.1's sched_switch passes prev_state (5.18+), which the program reads.
offcpu_case() {
	if $S record -v ${2:-} --off-cpu --off-cpu-thresh 0 -o /tmp/o.data -- $W sleeps 20 10000 > /dev/null 2> /tmp/err.txt &&
		grep -q "off-CPU on $1/sched_switch, the block's state from the tracepoint's prev_state" /tmp/err.txt; then
		ms=$($S report -i /tmp/o.data --event off-cpu --sort tid --format json |
			grep -o '"period": *[0-9]*' | awk -F: '{ s += $2 } END { printf "%d", s / 1e6 }')
		# 20 sleeps of 10 ms: at least 200 ms off CPU in the sleeping thread alone.
		[ "${ms:-0}" -ge 200 ] && ok "offcpu.bpf ($1) loads and times blocks" ||
			ko "offcpu.bpf ($1) loads and times blocks" "${ms:-0} ms off CPU"
	else
		ko "offcpu.bpf ($1) loads and times blocks" "$(tail -3 /tmp/err.txt)"
	fi
}
offcpu_case tp_btf
offcpu_case raw_tp --raw-tp
# The sleeping thread's kernel chains reused after its first block, proven from 6.1's ORC tables read
# from BPF (offkstack.bpf.h: struct orc_entry as 6.1 lays it out), each the kernel's whole chain.
if $S record -v --off-cpu --off-cpu-thresh 0 -o /tmp/ok.data -- $W sleeps 200 1000 > /dev/null 2> /tmp/err.txt; then
	r=$(sed -n 's/.*kernel stacks: \([0-9]*\) reused.*/\1/p' /tmp/err.txt)
	$S report -i /tmp/ok.data --event off-cpu --folded 2> /dev/null | grep '^workload;.*clock_nanosleep' > /tmp/ok.folded
	n=$(wc -l < /tmp/ok.folded)
	bad=$(grep -vc ';entry_SYSCALL_64_after_hwframe;do_syscall_64;.*;do_nanosleep;schedule;__schedule [0-9]*$' /tmp/ok.folded)
	if [ "${r:-0}" -ge 100 ] && [ "$n" -gt 0 ] && [ "$bad" -eq 0 ]; then
		ok "offcpu.bpf reuses kept kernel chains ($r of 200 blocks), each whole to the syscall entry"
	else
		ko "offcpu.bpf reuses kept kernel chains" "$(grep -m1 'kernel stacks' /tmp/err.txt); $bad of $n chains not do_nanosleep's whole: $(head -c 300 /tmp/ok.folded)"
	fi
else
	ko "offcpu.bpf reuses kept kernel chains" "$(grep -v '^libbpf' /tmp/err.txt | tail -3)"
fi

# --call-graph ehframe on this kernel: bpf_loop, attach cookies, the tables; chains of code without
# frame pointers (qsort's comparator through libc) reach main, on-CPU and off-CPU alike.  The
# samples before the new process's tables are read (slow here: emulated) go by frame pointer.
if $S record -v --call-graph ehframe -F 999 -o /tmp/e.data -- /workload_dwarf 1500 > /dev/null 2> /tmp/err.txt; then
	$S report -i /tmp/e.data --folded > /tmp/e.folded 2> /dev/null
	n=$(grep '^workload_dwarf;.*;cmp_ints ' /tmp/e.folded | awk '{ s += $NF } END { print s + 0 }')
	m=$(grep '^workload_dwarf;.*;main;.*;cmp_ints ' /tmp/e.folded | awk '{ s += $NF } END { print s + 0 }')
	u=$(unread_steps /tmp/err.txt)
	if reach_main "$n" "$m" "$u"; then
		ok "--call-graph ehframe: $m of $n comparator samples reach main ($u steps before the read)"
	else
		ko "--call-graph ehframe" "$m of $n comparator samples reach main; $(grep -E '^  (user chains|complete|stopped|frame-pointer)' /tmp/err.txt | tr '\n' ';')"
	fi
else
	ko "--call-graph ehframe" "$(grep -v '^libbpf' /tmp/err.txt | tail -3)"
fi
# The same with every mapping found from the kernel's vma (bpf_find_vma, as for a process whose
# mappings user space has not read yet): vm_area_struct as this kernel lays it out.
if SPANPERF_EH_VMA_ONLY=1 $S record -v --call-graph ehframe -F 999 -o /tmp/ev.data -- /workload_dwarf 1500 \
	> /dev/null 2> /tmp/err.txt; then
	$S report -i /tmp/ev.data --folded > /tmp/ev.folded 2> /dev/null
	n=$(grep '^workload_dwarf;.*;cmp_ints ' /tmp/ev.folded | awk '{ s += $NF } END { print s + 0 }')
	m=$(grep '^workload_dwarf;.*;main;.*;cmp_ints ' /tmp/ev.folded | awk '{ s += $NF } END { print s + 0 }')
	v=$(grep -E '^  mappings looked up in the kernel' /tmp/err.txt | awk '{ print $NF }')
	u=$(unread_steps /tmp/err.txt)
	if reach_main "$n" "$m" "$u" && [ "${v:-0}" -gt 0 ]; then
		ok "--call-graph ehframe from the kernel's vmas: $m of $n comparator samples reach main ($v lookups, $u steps before the read)"
	else
		ko "--call-graph ehframe from the kernel's vmas" "$m of $n reach main, ${v:-no} lookups; $(grep -E '^  (user chains|complete|stopped|frame-pointer)' /tmp/err.txt | tr '\n' ';')"
	fi
else
	ko "--call-graph ehframe from the kernel's vmas" "$(grep -v '^libbpf' /tmp/err.txt | tail -3)"
fi
if $S record --call-graph ehframe --off-cpu --off-cpu-thresh 0 -F 99 -o /tmp/eo.data -- /workload_dwarf block 10 20 \
	> /tmp/wl.json 2> /tmp/err.txt; then
	n=$($S report -i /tmp/eo.data --event off-cpu --folded 2> /dev/null | grep -c 'nap')
	[ "$n" -gt 0 ] && ok "--call-graph ehframe --off-cpu names nap()" ||
		ko "--call-graph ehframe --off-cpu names nap()" "$(head -c 300 /tmp/wl.json)"
else
	ko "--call-graph ehframe --off-cpu" "$(grep -v '^libbpf' /tmp/err.txt | tail -3)"
fi

# Python frames by name on this kernel (the walk's global functions, bpf_loop in bpf_loop): Debian's
# python3.11 (its libpython linked in), three levels deep, spinning in the innermost.
if [ ! -x /usr/bin/python3.11 ]; then
	echo "INFO no python3.11 in the guest (the host has no /usr/bin/python3.11): Python frames not checked"
elif $S record -g -v -F 999 -o /tmp/py.data -- /usr/bin/python3.11 -S /pyspin.py 4 > /dev/null 2> /tmp/err.txt; then
	$S report -i /tmp/py.data --folded --event on-cpu > /tmp/py.folded 2> /dev/null
	n=$(grep '^python3.11;.*;py::spin:/pyspin.py' /tmp/py.folded | awk '{ s += $NF } END { print s + 0 }')
	m=$(grep '^python3.11;.*;PyEval_EvalCode;py::<module>:/pyspin.py;py::level1:/pyspin.py;py::level2:/pyspin.py;py::spin:/pyspin.py' \
		/tmp/py.folded | awk '{ s += $NF } END { print s + 0 }')
	if [ "$n" -ge 100 ] && [ $((m * 100)) -ge $((n * 90)) ]; then
		ok "Python frames by name (python3.11): $m of $n samples in spin() carry <module>;level1;level2;spin"
	else
		ko "Python frames by name (python3.11)" "$m of $n; $(grep -E '^ *(python|Python)' /tmp/err.txt | tr '\n' ';')"
	fi
else
	ko "Python frames by name (python3.11)" "$(grep -v '^libbpf' /tmp/err.txt | tail -3)"
fi

# Java frames by name on this kernel (the HotSpot step inlined into eh_step within 6.1's 512 bytes
# of stack): Debian's OpenJDK 17 (a java.base runtime of it) runs the integration tests' Chain, whose
# main thread spins in main -> busy -> outer -> mid -> leaf, interpreted, then compiled.
if [ ! -x /jre/bin/java ]; then
	echo "INFO no JVM in the guest (the host has no JDK 17 with jlink and javac): Java frames not checked"
elif t0=$(cut -d. -f1 /proc/uptime) &&
	$S record -g -v -F 999 -o /tmp/jv.data -- /jre/bin/java -Xmx64m -cp /jcls Chain 4 > /dev/null 2> /tmp/err.txt; then
	echo "INFO the JVM's recording took $(($(cut -d. -f1 /proc/uptime) - t0)) s of the guest's time (4 s of it the chain's)"
	$S report -i /tmp/jv.data --folded --event on-cpu > /tmp/jv.folded 2> /dev/null
	n=$(grep '^java;.*;long Chain\.leaf(int)\(;int Chain\.tiny(int)\)\? [0-9]*$' /tmp/jv.folded | awk '{ s += $NF } END { print s + 0 }')
	m=$(grep '^java;.*;void Chain\.main(java\.lang\.String\[\]);void Chain\.busy(long);long Chain\.outer(int);long Chain\.mid(int);long Chain\.leaf(int)\(;int Chain\.tiny(int)\)\? [0-9]*$' \
		/tmp/jv.folded | awk '{ s += $NF } END { print s + 0 }')
	if [ "$n" -ge 100 ] && [ $((m * 100)) -ge $((n * 90)) ]; then
		ok "Java frames by name (OpenJDK 17): $m of $n samples in leaf() carry main;busy;outer;mid;leaf"
	else
		ko "Java frames by name (OpenJDK 17)" "$m of $n; $(grep -E '^ *(java|Java|python)' /tmp/err.txt | tr '\n' ';')"
	fi
else
	ko "Java frames by name (OpenJDK 17)" "$(grep -v '^libbpf' /tmp/err.txt | tail -3)"
fi

span_case "kprobe:vfs_read in kprobe mode" "kprobe:vfs_read@kprobe" kprobe
span_case "kprobe:vfs_read in forced fentry mode" "kprobe:vfs_read@fentry" fentry
span_case "kprobe:vfs_read in auto mode takes kprobe" "kprobe:vfs_read@auto" kprobe
span_case "syscall:read spans" "syscall:read" syscall
span_case "syscall:read spans on raw_syscalls" "syscall:read" syscall --raw-tp

# Kernel-mode samples' kernel chains unwound in BPF by 6.1's ORC rules (kstack.bpf.h, the entry
# decoded in 6.1's layout by orc.bpf.h), each compared with the kernel's own walk (SPANPERF_KSTACK_CHECK).
if SPANPERF_KSTACK_CHECK=1 $S record -v -a -g -F 999 -o /tmp/ks.data -- $W syscalls 3000 > /dev/null 2> /tmp/err.txt; then
	grep -E '^  kernel chains' /tmp/err.txt | sed 's/^ */INFO /'
	here=$(sed -n 's/^  kernel chains: \([0-9]*\) unwound by their ORC rules here.*/\1/p' /tmp/err.txt)
	if [ "${here:-0}" -gt 0 ] && ! grep -q "unlike the kernel's walk" /tmp/err.txt; then
		ok "kernel chains by 6.1's ORC rules: $here unwound in BPF, none unlike the kernel's"
	else
		ko "kernel chains by 6.1's ORC rules" "$(grep -E 'kernel chains' /tmp/err.txt | tr '\n' ' ')"
	fi
else
	ko "kernel chains by 6.1's ORC rules" "$(tail -2 /tmp/err.txt)"
fi

# Module frames: O_DIRECT reads of a ram disk spend their kernel time in brd.
if insmod /brd.ko rd_nr=1 rd_size=16384 2> /tmp/err.txt &&
	$S record -q -a -g -F 999 -o /tmp/m.data -- $W direct /dev/ram0 20000 > /dev/null 2> /tmp/err.txt; then
	$S report -i /tmp/m.data --sort dso,sym --format json > /tmp/m.json 2> /tmp/err.txt
	$S report -i /tmp/m.data --folded > /tmp/m.folded 2>> /tmp/err.txt
	grep '"\[brd\]"' /tmp/m.json | head -3 | sed 's/^/INFO /'
	leaf=$(grep -c '"dso":"\[brd\]"' /tmp/m.json)
	chain=$(grep -c 'brd_submit_bio' /tmp/m.folded)
	if [ "$chain" -gt 0 ] && [ "$leaf" -gt 0 ] && [ ! -s /tmp/err.txt ]; then
		ok "module frames named in [brd] ($leaf functions as leaves, $chain stacks through brd_submit_bio)"
		# For perf on the host: the file and this kernel's symbols it needs, on the second serial port.
		grep -E ' (_text|_stext|_etext)$|\[brd\]' /proc/kallsyms > /tmp/kallsyms
		(cd /tmp && tar cf - m.data kallsyms | base64) > /dev/ttyS1
	else
		ko "module frames named in [brd]" "$leaf leaf rows, $chain stacks; $(tail -2 /tmp/err.txt)"
	fi
else
	ko "module frames named in [brd]" "$(tail -2 /tmp/err.txt)"
fi

# uprobe spans.bpf programs load here too.
if $S record -q --span uprobe:$W:hidden_work -o /tmp/u.data -- $W calls 5 2 > /tmp/wl.json 2> /tmp/err.txt &&
	[ "$($S report -i /tmp/u.data --spans --format json | grep -c '"source":"uprobe"')" = 5 ]; then
	ok "uprobe spans (5 calls, 5 spans)"
else
	ko "uprobe spans (5 calls, 5 spans)" "$(tail -2 /tmp/err.txt)"
fi

# The split of a span's wall time and the wakers, CO-RE-relocated on this kernel: 20 sleeps of
# 5 ms are asleep (S), and each is ended by the timer interrupt; vfork's parent waits in D.
if $S record -q --off-cpu --span syscall:clock_nanosleep -o /tmp/w.data -- $W sleeps 20 5000 > /tmp/wl.json 2> /tmp/err.txt &&
	$S report -i /tmp/w.data --spans --format json > /tmp/w.json 2> /tmp/err.txt; then
	tid=$(sed 's/.*"tid":\([0-9]*\).*/\1/' /tmp/wl.json)
	# Asleep (S, not D) for at least the 5 ms asked: an emulated, busy guest oversleeps, never under.
	n=$(grep "\"tid\":$tid," /tmp/w.json | grep '"split":"sched_info"' | grep '"blocked_ns":0,' |
		grep -cE '"sleep_ns":([4-9][0-9]{6}|[0-9]{8,}),')
	# A sleep is never D: not one span of the thread may have blocked time.
	d=$(grep "\"tid\":$tid," /tmp/w.json | grep -vc '"blocked_ns":0,')
	irq=$(grep "\"tid\":$tid," /tmp/w.json | grep -c '"woken_by":\[{"comm":"\[hardirq\]"')
	[ "$n" -ge 18 ] && [ "$d" -eq 0 ] && [ "$irq" -ge 15 ] &&
		ok "span split and wakers ($n of 20 sleeps asleep 4 ms or more, $d blocked; $irq woken by [hardirq])" ||
		ko "span split and wakers" "$n asleep, $d blocked, $irq by [hardirq]; $(head -c 400 /tmp/w.json)"
else
	ko "span split and wakers" "$(tail -2 /tmp/err.txt)"
fi
if $S record -q --raw-tp --off-cpu --off-cpu-thresh 0 -o /tmp/w.data -- $W sleeps 5 5000 > /dev/null 2> /tmp/err.txt &&
	$S report -i /tmp/w.data --event off-cpu --sort waker --format json | grep -q '"waker":"\[hardirq\]"'; then
	ok "waker program (raw_tp twin) loads and names the timer interrupt"
else
	ko "waker program (raw_tp twin) loads and names the timer interrupt" "$(tail -2 /tmp/err.txt)"
fi
if $S stat --per-thread -e task-clock,run-delay,sleep,blocked -o /tmp/s.txt -- $W dwait 5 20 > /tmp/wl.json 2> /tmp/err.txt; then
	tid=$(sed 's/.*"tid":\([0-9]*\).*/\1/' /tmp/wl.json)
	ms=$(grep -- "-$tid " /tmp/s.txt | grep " blocked" | awk '{ printf "%d", $2 }')
	[ "${ms:-0}" -ge 95 ] && ok "stat -e blocked: vfork's parent $ms ms in D (5 x 20 ms)" ||
		ko "stat -e blocked" "${ms:-0} ms; $(cat /tmp/s.txt | head -20)"
else
	ko "stat -e blocked" "$(tail -2 /tmp/err.txt)"
fi

# The split by stamps at sched_switch and sched_wakeup, as on a kernel without sched_info (forced
# here, where 6.1 keeps it): queued_work() waits behind two spinners and sleeps 10 ms halfway.  Each
# call's run queue, sleep and D (5%, and 1 ms) are held to one of two truths the guest can read:
# ftrace's sched_switch and sched_wakeup of the thread over the span's own edges (sched_truth.awk),
# or the thread's schedstat around the call (run_delay; asleep: the window less sum_exec and
# run_delay), plus what of the span lies outside the window it read (a first uprobe hit here is
# slow).  Each truth stamps an edge at its own instant: schedstat on the run queue's clock early in
# __schedule and ttwu, the stamps and ftrace each in its own callback of the tracepoint.  Under TCG
# on a busy host the emulator is descheduled between two such instants now and then, and the guest's
# clock jumps there by whole ms: a call's 75.9 ms of run_delay was 63.5 ms at the tracepoint (its
# window 118.5 ms, its span 0.26 ms longer).  A split that is wrong misses both truths; a stall
# skews the stamps against the truth whose instant lies on its other side.  The four parts to the
# wall (1%); vfork's parent is blocked (D), not asleep.
grep -q "span wall-time split *scheduler accounts" /tmp/probe.txt &&
	SPANPERF_SCHED_SPLIT=stamps $S probe | grep -q "span wall-time split *stamps at sched_switch and sched_wakeup (forced" &&
	ok "probe: the split by the accounts here, by stamps when forced" ||
	ko "probe: the split's method" "$(grep split /tmp/probe.txt)"
ft=/sys/kernel/tracing/instances/spanperf_truth
rm -f /tmp/bad.txt
if mkdir -p $ft && echo mono > $ft/trace_clock && echo 8192 > $ft/buffer_size_kb &&
	echo 1 > $ft/events/sched/sched_switch/enable && echo 1 > $ft/events/sched/sched_wakeup/enable &&
	SPANPERF_SCHED_SPLIT=stamps $S record -q -F 99 --span uprobe:$W:queued_work --span uprobe:$W:vfork_wait -o /tmp/st.data \
		-- sh -c "$W runq 5 20 /tmp/ext.jsonl 10 && $W dwait 3 20" > /tmp/wl.json 2> /tmp/err.txt &&
	echo 0 > $ft/tracing_on && cat $ft/trace > /tmp/trace.txt &&
	$S report -i /tmp/st.data --spans --format json > /tmp/st.json 2> /tmp/err.txt; then
	# Every event kept: "entries-in-buffer/entries-written: N/N".
	lost=$(sed -n 's|^# entries-in-buffer/entries-written: \([0-9]*\)/\([0-9]*\).*|\1 \2|p' /tmp/trace.txt |
		awk '{ print $2 - $1 }')
	tid=$(grep -m1 '"name":"queued_work"' /tmp/st.json | sed 's/.*"tid":\([0-9]*\),.*/\1/')
	# Per call, in order: the span (start, end, runq, on, wall, sleep, D), ftrace's (runq, sleep, D)
	# over it, and schedstat's (run_delay, the window it was read around, the nanosleep's wall, sum_exec).
	grep '"name":"queued_work"' /tmp/st.json | grep '"split":"stamps"' |
		sed 's/.*"start_ns":\([0-9]*\),"end_ns":\([0-9]*\),"duration_ns":\([0-9]*\).*"on_cpu_ns":\([0-9]*\),"off_cpu_ns":[0-9]*,"runq_ns":\([0-9]*\),"sleep_ns":\([0-9]*\),"blocked_ns":\([0-9]*\).*/\1 \2 \5 \4 \3 \6 \7/' > /tmp/got.txt
	awk -v tid="$tid" -f /sched_truth.awk /tmp/got.txt /tmp/trace.txt > /tmp/ft.txt
	grep '"call":' /tmp/wl.json |
		sed 's/.*"start_ns":\([0-9]*\),"end_ns":\([0-9]*\),"sum_exec_ns":\([0-9]*\),"run_delay_ns":\([0-9]*\),"slept_ns":\([0-9]*\).*/\4 \1 \2 \5 \3/' > /tmp/truth.txt
	awk 'function off(a, b) { return a > b ? a - b : b - a }
		function near(got, want, more) { return off(got, want) <= 0.05 * want + 1000000 + more }
		FILENAME == "/tmp/truth.txt" { rd[FNR] = $1; win[FNR] = $3 - $2; slept[FNR] = $4; sum[FNR] = $5; next }
		FILENAME == "/tmp/ft.txt" { fq[FNR] = $1; fs[FNR] = $2; fd[FNR] = $3; next }
		{ k = FNR
		  out = $5 - win[k]; if (out < 0) out = 0
		  ss = win[k] - sum[k] - rd[k]; if (ss < 0) ss = 0
		  ft = near($3, fq[k], 0) && near($6, fs[k], 0) && near($7, fd[k], 0)
		  st = near($3, rd[k], out) && near($6, ss, out) && $7 <= out
		  printf "INFO stamps call %d: runq %.1f sleep %.1f D %.1f of %.1f ms; ftrace %.1f, %.1f, %.1f%s; schedstat %.1f, %.1f, 0 in its %.1f ms window (%.1f outside)%s\n",
			k - 1, $3 / 1e6, $6 / 1e6, $7 / 1e6, $5 / 1e6, fq[k] / 1e6, fs[k] / 1e6, fd[k] / 1e6, ft ? "" : " (off)",
			rd[k] / 1e6, ss / 1e6, win[k] / 1e6, out / 1e6, st ? "" : " (off)"
		  # The premise: a queue to wait in.
		  if (rd[k] > 0.3 * (win[k] - slept[k]) && (ft || st) && off($3 + $4 + $6 + $7, $5) <= 0.01 * $5) n++
		  else printf "call %d: span %s; ftrace %.0f %.0f %.0f; schedstat %.0f %.0f in %.0f ns; ", k - 1, $0, fq[k], fs[k], fd[k],
			rd[k], ss, win[k] > "/tmp/bad.txt" }
		END { print n + 0 }' /tmp/truth.txt /tmp/ft.txt /tmp/got.txt > /tmp/split.txt
	grep '^INFO stamps' /tmp/split.txt
	good=$(tail -1 /tmp/split.txt)
	# vfork's parent: in D at least most of the child's 20 ms sleep (no cap: a busy host's exec is
	# slow), its sleep and D each within 5% and 1 ms of ftrace's over the span.
	grep '"name":"vfork_wait"' /tmp/st.json | grep '"split":"stamps"' |
		sed 's/.*"start_ns":\([0-9]*\),"end_ns":\([0-9]*\),"duration_ns":\([0-9]*\).*"sleep_ns":\([0-9]*\),"blocked_ns":\([0-9]*\).*/\1 \2 \3 \4 \5/' > /tmp/vf.txt
	awk -v tid="$(grep -m1 '"name":"vfork_wait"' /tmp/st.json | sed 's/.*"tid":\([0-9]*\),.*/\1/')" \
		-f /sched_truth.awk /tmp/vf.txt /tmp/trace.txt > /tmp/vft.txt
	dn=$(awk 'function off(a, b) { return a > b ? a - b : b - a }
		function near(got, want) { return off(got, want) <= 0.05 * want + 1000000 }
		FILENAME == "/tmp/vft.txt" { fs[FNR] = $2; fd[FNR] = $3; next }
		{ printf "INFO stamps vfork %d: sleep %.1f D %.1f of %.1f ms; ftrace %.1f, %.1f\n", FNR - 1, $4 / 1e6, $5 / 1e6,
			$3 / 1e6, fs[FNR] / 1e6, fd[FNR] / 1e6
		  if ($5 >= 15000000 && near($4, fs[FNR]) && near($5, fd[FNR])) n++ }
		END { print n + 0 }' /tmp/vft.txt /tmp/vf.txt)
	echo "$dn" | grep '^INFO'
	dn=$(echo "$dn" | tail -1)
	[ "$lost" = 0 ] && [ "$good" -eq 5 ] && [ "$(wc -l < /tmp/got.txt)" -eq 5 ] && [ "$dn" -eq 3 ] &&
		ok "span split by stamps (forced): 5 of 5 calls' run queue, sleep and D within 5% of ftrace's or schedstat's, 3 of 3 vforks in D" ||
		ko "span split by stamps" "$good of 5 calls, $dn of 3 vforks, ${lost:-?} trace events lost; $(cat /tmp/bad.txt 2>/dev/null) $(head -c 600 /tmp/st.json)"
else
	ko "span split by stamps" "$(tail -2 /tmp/err.txt)"
fi
echo 0 > $ft/tracing_on 2> /dev/null
rmdir $ft 2> /dev/null

# A JIT in a mount namespace of its own names its code in its own /tmp: record reads the map
# inside its root and keeps it in the file.  SPANPERF_NO_OPENAT2=1 takes the path of kernels
# without openat2 (a walk, one component at a time, that refuses procfs): both are checked here.
for how in openat2 walk; do
	unshare -m sh -c 'mount -t tmpfs t /tmp && exec /workload jit 20000' > /dev/null 2>&1 &
	jit=$!
	sleep 1
	if [ "$how" = walk ]; then env=SPANPERF_NO_OPENAT2=1; else env=SPANPERF_NO_OPENAT2=0; fi
	if env $env $S record -v -d 1 -o /tmp/j.data > /dev/null 2> /tmp/err.txt; then
		kill $jit 2> /dev/null
		wait $jit 2> /dev/null
		n=$($S report -i /tmp/j.data --sort sym 2> /dev/null | grep -c 'jitted_loop')
		[ "$n" -ge 1 ] && ok "a contained JIT's perf map kept and used ($how)" ||
			ko "a contained JIT's perf map kept and used ($how)" "$(grep 'JIT perf maps' /tmp/err.txt)"
	else
		kill $jit 2> /dev/null
		ko "a contained JIT's perf map kept and used ($how)" "$(tail -2 /tmp/err.txt)"
	fi
done

# Span cost per read() with kprobe and fentry spans on vfs_read: measured,
# not asserted, and emulated (TCG), so only the difference means anything.
per_call() { sed 's/.*"cpu_ns_per_call":\([0-9.]*\).*/\1/'; }
base=$($W readloop 20000 | per_call)
for mode in kprobe fentry; do
	with=$($S record -q -F 10 -o /tmp/c.data --span "kprobe:vfs_read@$mode" -- $W readloop 20000 | per_call)
	echo "INFO $mode span on vfs_read: $(awk "BEGIN{printf \"%.0f\", $with - $base}") ns per span beyond a bare read() of $base ns (emulated: TCG)"
done

# libspanperf's task-clock with no syscall: this guest's event pages have
# cap_user_time (the host's paravirtual clock gives none), so the mmap path is
# taken and every read must fall between two read(2)s around it, across sleeps.
if out=$(/libspanperf_mmap 2>&1); then
	ok "libspanperf reads task-clock from the event page ($out)"
else
	ko "libspanperf reads task-clock from the event page" "$out"
fi

# libspanperf's sampler with CPU 1 possible but offline (possible_cpus=2): skipped, CPU 0 opened alone.
if out=$(/sampler_offline 2>&1); then
	ok "libspanperf's sampler skips an offline CPU ($out)"
else
	ko "libspanperf's sampler skips an offline CPU" "$out"
fi

echo "$pass passed, $fail failed"
