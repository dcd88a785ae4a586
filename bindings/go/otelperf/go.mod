module spanperf/otelperf

go 1.19

require (
	go.opentelemetry.io/otel v1.1.0
	go.opentelemetry.io/otel/sdk v1.1.0
	spanperf v0.0.0
)

replace spanperf => ../
