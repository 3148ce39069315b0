import type { ExternalJob, ExternalStatus, Summary, TaskContext } from "../../core/pipeline/types.ts";
import { remoteLogTail } from "../../core/policy/external-job.ts";

/** One step of an external task's code, asked of the place task code runs (a task host, or this process). */
export type ExternalCall =
  | { op: "submit"; key: string }
  | { op: "poll"; handle: unknown }
  | { op: "cancel"; handle: unknown };

/** The remote log a poll hands back keeps its last 64 KiB: the attempt's log is bounded as a whole too. */
export const REMOTE_LOG_MAX_BYTES = 64 * 1024;

/**
 * Runs one step of an external job and answers it as a summary the worker reads back:
 * `{ handle, link }` for a submit, `{ status }` for a poll, `{}` for a cancel. A handle must be
 * JSON: it is recorded in the state store before idem waits on it.
 */
export async function runExternalCall(job: ExternalJob<any>, call: ExternalCall | undefined, ctx: TaskContext): Promise<Summary> {
  if (!call) throw new Error("an external task's code is called with a step (submit, poll or cancel)");
  switch (call.op) {
    case "submit": {
      const handle = await job.submit(ctx, call.key);
      if (handle === undefined || typeof handle === "function") throw new TypeError(`submit returned ${typeof handle}, not a handle: return what names the remote job (an id, or a small object)`);
      const text = JSON.stringify(handle);
      return { handle: JSON.parse(text) as unknown, link: job.link?.(handle) ?? null };
    }
    case "poll":
      return { status: checkedStatus(await job.poll(call.handle, ctx)) };
    case "cancel":
      await job.cancel(call.handle, ctx);
      return {};
    default:
      return call satisfies never;
  }
}

function checkedStatus(status: ExternalStatus): ExternalStatus {
  const state = (status as { state?: unknown } | null)?.state;
  if (state !== "running" && state !== "succeeded" && state !== "failed") {
    throw new TypeError(`poll returned ${JSON.stringify(status)}: a status is { state: "running" | "succeeded" | "failed", ... }`);
  }
  const log = typeof status.log === "string" ? remoteLogTail(status.log, REMOTE_LOG_MAX_BYTES) : undefined;
  if (status.state === "failed") return { state: "failed", error: String(status.error ?? "the remote job failed"), dataError: status.dataError === true, log };
  if (status.state === "succeeded") return { state: "succeeded", summary: status.summary, log };
  return { state: "running", log };
}
