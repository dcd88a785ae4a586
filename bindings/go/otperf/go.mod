module spanperf/otperf

go 1.19

require (
	github.com/opentracing/opentracing-go v1.2.0
	spanperf v0.0.0
)

replace spanperf => ../
