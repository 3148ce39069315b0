import { createHash } from "node:crypto";

/**
 * A run's trace and span ids, derived from durable names only: every process that records part
 * of a run (a retry, a rerun, a worker after a kill -9) finds the same ids, so the run is one trace.
 */

/** 32 hex digits: the first 16 bytes of sha256 of the run id. */
export function traceIdOf(runId: string): string {
  return nonZero(digest(`trace\0${runId}`).slice(0, 32));
}

/** The run's own span: the parent of its attempts. */
export function runSpanIdOf(runId: string): string {
  return nonZero(digest(`run\0${runId}`).slice(0, 16));
}

/** One attempt's span: its run, its task and its try. */
export function attemptSpanIdOf(runId: string, taskId: string, tryNumber: number): string {
  return nonZero(digest(`attempt\0${runId}\0${taskId}\0${tryNumber}`).slice(0, 16));
}

/** W3C trace context for the task code of an attempt: `00-<trace id>-<attempt span id>-01` (sampled). */
export function attemptTraceparent(runId: string, taskId: string, tryNumber: number): string {
  return `00-${traceIdOf(runId)}-${attemptSpanIdOf(runId, taskId, tryNumber)}-01`;
}

/** Tracing is on when an OTLP endpoint is named, as the OpenTelemetry SDKs read it. */
export function tracingEnabled(env: NodeJS.ProcessEnv): boolean {
  return !!(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** All zeros is the W3C's invalid id: the odds are nil, but a collector would drop the span. */
function nonZero(hex: string): string {
  return /^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}
