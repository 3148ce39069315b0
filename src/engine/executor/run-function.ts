import { DataError, DefinitionError } from "../../core/model/errors.ts";
import { TaskSkipped } from "../../core/pipeline/skip.ts";
import type { Summary, TaskContext, TaskFunction } from "../../core/pipeline/types.ts";
import { formatDuration } from "../../core/time/duration.ts";
import type { AttemptResult } from "./attempt-result.ts";
import { realSleep } from "./real-sleep.ts";
import { stopReason } from "./stop-reason.ts";
import { ErrorClass } from "../../core/model/error-classes.ts";

export interface FunctionRunOptions {
  fn: TaskFunction<any>;
  /** The context without its signal; the runner owns the signal so it can time the task out. */
  context: Omit<TaskContext, "signal">;
  /** Real milliseconds: see realSleep. */
  timeoutMs: number | null;
  /** How long a timed-out function gets to notice its signal before the attempt is failed anyway. */
  graceMs: number;
  /** Fires when the worker shuts down. */
  cancel?: AbortSignal;
}

type Settled = { kind: "returned"; value: Summary | void } | { kind: "threw"; error: unknown };

export async function runFunctionTask(options: FunctionRunOptions): Promise<AttemptResult> {
  const controller = new AbortController();
  const stopTimer = new AbortController();
  const onCancel = () => controller.abort(options.cancel!.reason);
  options.cancel?.addEventListener("abort", onCancel, { once: true });
  if (options.cancel?.aborted) onCancel();

  const settled: Promise<Settled> = (async () => {
    try {
      return { kind: "returned" as const, value: await options.fn({ ...options.context, signal: controller.signal }) };
    } catch (error) {
      return { kind: "threw" as const, error };
    }
  })();
  const timedOut =
    options.timeoutMs === null
      ? new Promise<"timeout">(() => {})
      : realSleep(options.timeoutMs, stopTimer.signal).then(() => "timeout" as const);
  const cancelled = new Promise<"cancelled">((resolve) => {
    if (controller.signal.aborted) resolve("cancelled");
    controller.signal.addEventListener("abort", () => resolve("cancelled"), { once: true });
  });

  try {
    const first = await Promise.race([settled, timedOut, cancelled]);
    if (first === "timeout" || first === "cancelled") {
      const stop = first === "timeout" ? { errorClass: ErrorClass.Timeout, message: `timed out after ${formatDuration(options.timeoutMs!)}` } : stopReason(options.cancel!);
      const why = stop.message;
      if (first === "timeout") controller.abort(new Error(why));
      const stopped = await Promise.race([
        settled.then(() => true),
        realSleep(options.graceMs, stopTimer.signal).then(() => false),
      ]);
      return {
        outcome: "failed",
        errorClass: stop.errorClass,
        errorMessage: stopped ? why : `${why}; it did not stop within ${formatDuration(options.graceMs)} of its signal`,
        retryable: true,
        exitCode: null,
      };
    }
    if (first.kind === "returned") return { outcome: "success", summary: first.value ?? null, exitCode: null };
    return fromError(first.error);
  } finally {
    stopTimer.abort();
    options.cancel?.removeEventListener("abort", onCancel);
  }
}

export function fromError(error: unknown): AttemptResult {
  if (error instanceof TaskSkipped) return { outcome: "skipped", reason: error.reason, summary: null, exitCode: null };
  if (error instanceof DataError) {
    return { outcome: "failed", errorClass: ErrorClass.DataError, errorMessage: error.message, retryable: false, exitCode: null };
  }
  // A task that is wrong as written (a SQL task naming an unknown parameter) fails the same way on every try.
  if (error instanceof DefinitionError) {
    return { outcome: "failed", errorClass: ErrorClass.DefinitionError, errorMessage: error.message, retryable: false, exitCode: null };
  }
  // Any other exception is the task's own failure; its name (TypeError, a driver's error) is kept
  // at the head of the message, so the class stays one of idem's and nothing is lost.
  const e = error instanceof Error ? error : new Error(String(error));
  const name = e.name && e.name !== "Error" ? `${e.name}: ` : "";
  return { outcome: "failed", errorClass: ErrorClass.TaskFailed, errorMessage: `${name}${e.message}`, retryable: true, exitCode: null };
}
