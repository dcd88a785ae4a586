module spanperf/ebpftest

go 1.19

require (
	github.com/cilium/ebpf v0.9.1
	spanperf v0.0.0
)

replace spanperf => ../
