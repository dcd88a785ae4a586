# The kernel's own account of one thread over each span, read from ftrace's
# sched_switch and sched_wakeup events (an instance of its own, trace_clock
# mono: bpf_ktime_get_ns' clock): one of the two truths for the split by
# stamps in the guest (guest-tests.sh), taken at the same tracepoints as the
# stamps, in a callback of their own.
#
#   awk -v tid=TID -f sched_truth.awk SPANS TRACE
# SPANS: "start_ns end_ns" a line; prints "runq_ns sleep_ns blocked_ns" a
# line per span.  A thread switched out runnable waits until its switch-in;
# switched out to S or D it is blocked until its wakeup, and waits from
# there; a switch-in with no wakeup before it (a signal was pending) ends a
# wait, not a sleep.

# Adds [a, b] of kind to each span it overlaps.
function add(kind, a, b,   k, lo, hi) {
	for (k = 1; k <= ns; k++) {
		lo = a > s0[k] ? a : s0[k]
		hi = b < s1[k] ? b : s1[k]
		if (hi > lo)
			acc[kind, k] += hi - lo
	}
}

FNR == NR { ns++; s0[ns] = $1; s1[ns] = $2; next }

/ sched_switch: | sched_wakeup: / {
	for (i = 2; i <= NF; i++)
		if ($i == "sched_switch:" || $i == "sched_wakeup:")
			break
	# "SECONDS.MICROSECONDS:" (comms may hold spaces: fields are found by name).  busybox awk
	# reads "004589" as octal, and stops at the 8: the microseconds are read behind a 1.
	split($(i - 1), tp, /[.:]/)
	t = tp[1] * 1000000000 + (("1" tp[2]) - 1000000) * 1000
	prev = nxt = pid = st = ""
	for (j = i + 1; j <= NF; j++) {
		if ($j ~ /^prev_pid=/)
			prev = substr($j, 10)
		else if ($j ~ /^next_pid=/)
			nxt = substr($j, 10)
		else if ($j ~ /^prev_state=/)
			st = substr($j, 12)
		else if ($j ~ /^pid=/)
			pid = substr($j, 5)
	}
	if ($i == "sched_wakeup:") {
		if (pid == tid && (state == "S" || state == "D")) {
			add(state, from, t)
			state = "W"
			from = t
		}
		next
	}
	# Preempted ("R+") or yielding ("R"): runnable.
	if (prev == tid) {
		state = st ~ /^R/ ? "W" : (st ~ /^D/ ? "D" : "S")
		from = t
	}
	if (nxt == tid) {
		if (state != "")
			add("W", from, t)
		state = ""
	}
}

END {
	for (k = 1; k <= ns; k++)
		printf "%d %d %d\n", acc["W", k], acc["S", k], acc["D", k]
}
