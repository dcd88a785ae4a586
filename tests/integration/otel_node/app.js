// SPDX-License-Identifier: GPL-2.0
// A Node application traced with the OpenTelemetry SDK, as a user would:
// N spans, each around MS milliseconds of CPU, exported by a few-line file
// exporter in OTLP JSON (what the Collector's file exporter writes).
// Prints each span's id and the CPU it used, as ground truth.
//
//   node app.js OUT.json N MS
'use strict';
const fs = require('fs');
const { trace } = require('@opentelemetry/api');
const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
const { SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');

const [out, n, ms] = [process.argv[2], +process.argv[3], +process.argv[4]];

const nanos = (t) => (BigInt(t[0]) * 1000000000n + BigInt(t[1])).toString();
const anyValue = (v) => (Number.isInteger(v) ? { intValue: String(v) } :
	typeof v === 'number' ? { doubleValue: v } : { stringValue: String(v) });

class OtlpJsonFileExporter {
	constructor(path) { this.path = path; this.spans = []; }
	export(spans, done) {
		for (const s of spans) {
			this.spans.push({
				traceId: s.spanContext().traceId, spanId: s.spanContext().spanId,
				parentSpanId: s.parentSpanContext ? s.parentSpanContext.spanId : '',
				name: s.name, kind: s.kind + 1,
				startTimeUnixNano: nanos(s.startTime), endTimeUnixNano: nanos(s.endTime),
				attributes: Object.entries(s.attributes).map(([key, v]) => ({ key, value: anyValue(v) })),
				status: {},
			});
		}
		done({ code: 0 });
	}
	shutdown() {
		const req = { resourceSpans: [{
			resource: { attributes: [{ key: 'process.pid', value: { intValue: String(process.pid) } },
				{ key: 'service.name', value: { stringValue: 'spanperf-test' } }] },
			scopeSpans: [{ scope: { name: 'spanperf-test' }, spans: this.spans }] }] };
		fs.writeFileSync(this.path, JSON.stringify(req) + '\n');
		return Promise.resolve();
	}
	forceFlush() { return Promise.resolve(); }
}

// This thread's CPU time in ns (schedstat), not the process's: V8 compiles
// and collects garbage on threads of its own.
const threadCpuNs = () => Number(fs.readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);
let sink = 0;
function burn(msCpu) {
	const end = threadCpuNs() + msCpu * 1e6;
	while (threadCpuNs() < end)
		for (let i = 0; i < 20000; i++)
			sink += i * i;
}

const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new OtlpJsonFileExporter(out))] });
provider.register();
const tracer = trace.getTracer('spanperf-test');
for (let i = 0; i < n; i++) {
	// The main thread's id is the process id: the semantic conventions' thread.id.
	tracer.startActiveSpan('work', { attributes: { 'thread.id': process.pid } }, (span) => {
		const c0 = threadCpuNs();
		burn(ms * (1 + (i % 3)));
		const cpu = threadCpuNs() - c0;
		span.end();
		console.log(JSON.stringify({ span_id: span.spanContext().spanId, cpu_ns: cpu, sink: sink > 0 }));
	});
}
provider.shutdown();
