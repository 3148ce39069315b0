import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Attributes } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, type IdGenerator } from "@opentelemetry/sdk-trace-base";
import { attemptSpanIdOf, runSpanIdOf, traceIdOf } from "./trace-ids.ts";

/** A finished span as the store recorded it: written whole, with the recorded times. */
export interface EndedSpan {
  name: string;
  runId: string;
  /** null: the run's own span; else the attempt's task and try. */
  attempt: { taskId: string; tryNumber: number } | null;
  startMs: number;
  endMs: number;
  attributes: Attributes;
  error: string | null;
}

/**
 * Hands out the ids the next span must have: the SDK asks its IdGenerator for a root span's
 * trace id and every span's id, and idem's ids are derived from the run (trace-ids.ts).
 */
class DerivedIds implements IdGenerator {
  next: { traceId: string; spanId: string } | null = null;
  generateTraceId(): string {
    return this.next!.traceId;
  }
  generateSpanId(): string {
    return this.next!.spanId;
  }
}

/** The OpenTelemetry SDK and its OTLP/HTTP exporter, configured from the OTEL_* variables. */
export class OtelExport {
  readonly #ids = new DerivedIds();
  readonly #provider: BasicTracerProvider;
  readonly #tracer;

  constructor(env: NodeJS.ProcessEnv) {
    this.#provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME || "idem" }),
      idGenerator: this.#ids,
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    this.#tracer = this.#provider.getTracer("idem");
  }

  write(span: EndedSpan): void {
    const traceId = traceIdOf(span.runId);
    const runSpanId = runSpanIdOf(span.runId);
    // An attempt's parent is its run's span, known by its derived id though written elsewhere or later.
    const parent = span.attempt === null
      ? ROOT_CONTEXT
      : trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: runSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
    this.#ids.next = { traceId, spanId: span.attempt === null ? runSpanId : attemptSpanIdOf(span.runId, span.attempt.taskId, span.attempt.tryNumber) };
    let written;
    try {
      written = this.#tracer.startSpan(span.name, { kind: SpanKind.INTERNAL, startTime: span.startMs, attributes: span.attributes }, parent);
    } finally {
      this.#ids.next = null;
    }
    if (span.error !== null) written.setStatus({ code: SpanStatusCode.ERROR, message: span.error });
    written.end(Math.max(span.startMs, span.endMs));
  }

  /** Sends what is buffered and stops: the process is ending. */
  shutdown(): Promise<void> {
    return this.#provider.shutdown();
  }
}
