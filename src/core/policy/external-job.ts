import { createHash } from "node:crypto";
import { canonicalJson } from "../pipeline/canonical-json.ts";
import type { ExternalPolicy } from "../pipeline/types.ts";

/** What names one submission of a remote job. */
export interface ExternalJobKeyInput {
  pipelineId: string;
  businessDate: string;
  taskId: string;
  /** The mapped task's key, for a task mapped over several items; absent for a plain task. */
  mapKey?: string | null;
  /**
   * Which submission of the task instance this is: 1, then one more after each job that ended
   * without success or was cancelled (the try policy decided to submit again). Attempts that
   * reattach, and a retry after a submit whose answer was lost, share the number, so they share
   * the key; a deliberate new submission gets a new key, so an engine that remembers tokens does
   * not hand back the failed job again.
   */
  submission: number;
}

/** At most this long: Databricks' idempotency_token takes 64 characters. */
export const EXTERNAL_KEY_MAX_LENGTH = 64;

/**
 * The key a job is submitted under: a pure function of what names the submission, made of
 * `[A-Za-z0-9_.-]` only (a Slurm job name, a Spark application name, an HTTP token, a file name),
 * at most 64 characters. A readable head (pipeline, business date, task, submission) and a hash of
 * every input, so two different submissions never share a key however their names are cut.
 */
export function externalJobKey(input: ExternalJobKeyInput): string {
  if (!Number.isInteger(input.submission) || input.submission < 1) {
    throw new RangeError(`an external job's submission is a whole number from 1, not ${input.submission}`);
  }
  const hash = createHash("sha256")
    .update(canonicalJson({ p: input.pipelineId, d: input.businessDate, t: input.taskId, m: input.mapKey ?? null, s: input.submission }))
    .digest("hex")
    .slice(0, 16);
  const tail = `-${input.businessDate.replace(/[^0-9]/g, "")}-s${input.submission}-${hash}`;
  const room = EXTERNAL_KEY_MAX_LENGTH - "idem-".length - tail.length - 1;
  const names = `${slug(input.pipelineId)}.${slug(input.taskId)}`.slice(0, Math.max(0, room));
  return `idem-${names}${tail}`;
}

function slug(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]+/g, "_");
}

/**
 * When to poll a running job next: every `pollIntervalMs`, or with backoff a wait as long as the
 * job has run so far (so polls double), between the interval and `maxPollIntervalMs`; never past
 * the deadline the task's timeout sets, so a timeout is seen when it falls.
 */
export function nextPollAt(policy: ExternalPolicy, submittedAt: number, now: number, deadline: number | null): number {
  const ran = Math.max(0, now - submittedAt);
  const wait = policy.pollBackoff
    ? Math.max(policy.pollIntervalMs, Math.min(policy.maxPollIntervalMs, ran))
    : policy.pollIntervalMs;
  return deadline === null ? now + wait : Math.max(now, Math.min(now + wait, deadline));
}

/** The instant a job submitted at `submittedAt` times out under the task's timeout, or null. */
export function externalDeadline(timeoutMs: number | null, submittedAt: number): number | null {
  return timeoutMs === null ? null : submittedAt + timeoutMs;
}

/** The last `maxBytes` of a remote log, cut at a line, with a line saying how much was left out. */
export function remoteLogTail(text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return text;
  const tail = Buffer.from(text).subarray(bytes - maxBytes).toString("utf8");
  const cut = tail.indexOf("\n");
  const kept = cut >= 0 ? tail.slice(cut + 1) : tail;
  return `[${bytes - Buffer.byteLength(kept)} bytes of the remote log left out]\n${kept}`;
}
