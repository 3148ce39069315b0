import type { ExternalStatus, ExternalTask, Summary } from "../../../core/pipeline/types.ts";
import { externalDeadline, externalJobKey, nextPollAt } from "../../../core/policy/external-job.ts";
import { parseMappedTaskId } from "../../../core/policy/fan-out.ts";
import { formatDuration } from "../../../core/time/duration.ts";
import { ErrorClass } from "../../../core/model/error-classes.ts";
import type { ExternalJobRecord } from "../../../store/port.ts";
import type { AttemptResult } from "../attempt-result.ts";
import type { KindAttempt } from "./kind-attempt.ts";

/** A submit, a poll or a cancel is a short call: it may take this long before it counts as hung. */
export const EXTERNAL_STEP_TIMEOUT_MS = 5 * 60_000;

/**
 * One step of an external task, like one poke of a sensor in reschedule mode: between steps the
 * task instance holds no worker slot and no task host, and no pool slot unless its job was
 * recorded holding them (`holdPoolWhileRemote`: the store counts them until the job ends).
 *
 * - No job recorded: submit under the key of the next submission (core's `externalJobKey`),
 *   record the handle in the store (fenced by this attempt), and only then wait: a worker that
 *   dies after the submit and before the record leaves the key, which the next attempt submits
 *   again under, so an engine that refuses a duplicate key refuses it.
 * - A job recorded open (this try's, or an earlier try's whose attempt was lost): poll it first.
 *   Running: poll again later, or past the task's timeout (counted from the submission) cancel
 *   it and fail the try. Ended: record how, and end the attempt so.
 * - A job recorded to cancel (its task instance was cleared): cancel it before submitting anew.
 */
export async function externalAttempt(task: ExternalTask, attempt: KindAttempt): Promise<AttemptResult> {
  const { claim, env, log } = attempt;
  const jobs = env.externalJobs;
  if (!jobs) {
    return { outcome: "failed", errorClass: ErrorClass.DefinitionError, errorMessage: "external tasks need a worker with a state store", retryable: false, exitCode: null };
  }
  const by = { attemptId: claim.attemptId, workerId: env.workerId };
  const step = (external: NonNullable<Parameters<KindAttempt["code"]>[0]["external"]>) =>
    attempt.code({ upstream: external.op === "submit", external, timeoutMs: stepTimeout(task) });

  let { job, submissions } = await jobs.externalJobOf(claim.runId, claim.taskId);
  if (job?.state === "cancel_requested") {
    log.line("INFO", `cancelling ${describe(job)}: ${job.note ?? "its task instance no longer waits on it"}`);
    const cancelled = await step({ op: "cancel", handle: JSON.parse(job.handle) });
    if (cancelled.outcome !== "success") return cancelled;
    await jobs.endExternalJob({ jobId: job.jobId, state: "cancelled", at: env.clock.now(), note: null, by: null });
    job = null;
  }

  if (job === null) {
    // A mapped instance's key names its task and its map key apart (not `task[key]` as one name).
    const taskId = parseMappedTaskId(claim.taskId)?.taskId ?? claim.taskId;
    const key = externalJobKey({ pipelineId: claim.pipelineId, businessDate: claim.businessDate, taskId, mapKey: claim.mapKey, submission: submissions + 1 });
    log.line("INFO", `submitting ${task.external.adapter ?? "custom"} job under key ${key}`);
    const submitted = await step({ op: "submit", key });
    if (submitted.outcome !== "success") return submitted;
    const handle = submitted.summary!.handle;
    const link = typeof submitted.summary!.link === "string" ? submitted.summary!.link : null;
    const now = env.clock.now();
    const recorded = await jobs.recordExternalJob({
      attemptId: claim.attemptId, workerId: env.workerId, key, handle: JSON.stringify(handle), adapter: task.external.adapter ?? "custom", link, at: now,
      holdsPool: task.externalPolicy.holdPoolWhileRemote,
    });
    if (!recorded) {
      return {
        outcome: "failed", errorClass: ErrorClass.LeaseLost, retryable: true, exitCode: null,
        errorMessage: `submitted job ${JSON.stringify(handle)} under key ${key}, but its handle could not be recorded: this attempt is no longer the task instance's current one`,
      };
    }
    log.line("INFO", `submitted ${describe(recorded)}; handle recorded, next poll at ${iso(nextPoll(task, recorded, now))}`);
    return { outcome: "rescheduled", pokeAt: nextPoll(task, recorded, now), summary: jobSummary(recorded) };
  }

  if (job.tryNumber !== claim.tryNumber && job.attemptId !== claim.attemptId) {
    log.line("INFO", `reattaching to ${describe(job)}, submitted on try ${job.tryNumber}: polling it before anything else`);
  }
  const polled = await step({ op: "poll", handle: JSON.parse(job.handle) });
  if (polled.outcome !== "success") return lastTry(claim, polled) ? giveUp(job, polled, attempt, by) : polled;
  const status = polled.summary!.status as ExternalStatus;
  if (status.log) for (const line of status.log.replace(/\n$/, "").split("\n")) log.line("INFO", `[remote] ${line}`);
  const now = env.clock.now();
  switch (status.state) {
    case "running": {
      const deadline = externalDeadline(task.policy.timeoutMs, job.submittedAt);
      if (deadline !== null && now >= deadline) return timedOut(task, job, attempt, by);
      const at = nextPoll(task, job, now);
      log.line("INFO", `${describe(job)} is running; next poll at ${iso(at)}`);
      return { outcome: "rescheduled", pokeAt: at, summary: jobSummary(job) };
    }
    case "succeeded": {
      if (!(await jobs.endExternalJob({ jobId: job.jobId, state: "succeeded", at: now, note: null, by }))) return stale(job);
      log.line("INFO", `${describe(job)} succeeded`);
      return { outcome: "success", summary: { ...(status.summary ?? {}), ...jobSummary(job) }, exitCode: null };
    }
    case "failed": {
      if (!(await jobs.endExternalJob({ jobId: job.jobId, state: "failed", at: now, note: status.error, by }))) return stale(job);
      return {
        outcome: "failed",
        errorClass: status.dataError ? ErrorClass.DataError : ErrorClass.TaskFailed,
        errorMessage: `${describe(job)} failed: ${status.error}`,
        retryable: !status.dataError,
        exitCode: null,
      };
    }
    default:
      return status satisfies never;
  }
}

async function timedOut(task: ExternalTask, job: ExternalJobRecord, attempt: KindAttempt, by: { attemptId: number; workerId: string }): Promise<AttemptResult> {
  const { env, log } = attempt;
  const why = `timed out after ${formatDuration(task.policy.timeoutMs!)} from its submission`;
  log.line("WARN", `${describe(job)} ${why}: cancelling it`);
  const cancelled = await attempt.code({ upstream: false, external: { op: "cancel", handle: JSON.parse(job.handle) }, timeoutMs: stepTimeout(task) });
  if (cancelled.outcome !== "success") return cancelled;
  if (!(await env.externalJobs!.endExternalJob({ jobId: job.jobId, state: "cancelled", at: env.clock.now(), note: why, by }))) return stale(job);
  log.line("INFO", `${describe(job)} cancelled`);
  return { outcome: "failed", errorClass: ErrorClass.Timeout, errorMessage: `${describe(job)} ${why}; cancelled`, retryable: true, exitCode: null };
}

/** Whether this failure ends the task instance for good: no retry will come to reattach. */
function lastTry(claim: KindAttempt["claim"], result: AttemptResult): result is Extract<AttemptResult, { outcome: "failed" }> {
  if (result.outcome !== "failed") return false;
  // A stop, a lost lease or a changed file hand the same try on: someone reattaches.
  if (result.errorClass === ErrorClass.Cancelled || result.errorClass === ErrorClass.LeaseLost || result.errorClass === ErrorClass.DefinitionChanged) return false;
  return !result.retryable || claim.tryNumber >= claim.maxTries;
}

/**
 * A poll failed on the last try: nobody will wait on the job any more, so it is cancelled (and
 * recorded so) rather than left running. If the cancel fails too, the job stays recorded open
 * and the failure says so.
 */
async function giveUp(job: ExternalJobRecord, failure: Extract<AttemptResult, { outcome: "failed" }>, attempt: KindAttempt, by: { attemptId: number; workerId: string }): Promise<AttemptResult> {
  const { env, log } = attempt;
  log.line("WARN", `polling ${describe(job)} failed on the last try: cancelling it`);
  const cancelled = await attempt.code({ upstream: false, external: { op: "cancel", handle: JSON.parse(job.handle) }, timeoutMs: EXTERNAL_STEP_TIMEOUT_MS });
  if (cancelled.outcome !== "success") {
    const why = cancelled.outcome === "failed" ? cancelled.errorMessage : cancelled.outcome;
    return { ...failure, errorMessage: `${failure.errorMessage}; cancelling ${describe(job)} failed too (${why}): it may still run` };
  }
  await env.externalJobs!.endExternalJob({ jobId: job.jobId, state: "cancelled", at: env.clock.now(), note: `polling it failed on the last try: ${failure.errorMessage}`, by });
  return { ...failure, errorMessage: `${failure.errorMessage}; ${describe(job)} cancelled` };
}

function stale(job: ExternalJobRecord): AttemptResult {
  return { outcome: "failed", errorClass: ErrorClass.LeaseLost, errorMessage: `${describe(job)}: this attempt is no longer the task instance's current one`, retryable: true, exitCode: null };
}

function nextPoll(task: ExternalTask, job: ExternalJobRecord, now: number): number {
  return nextPollAt(task.externalPolicy, job.submittedAt, now, externalDeadline(task.policy.timeoutMs, job.submittedAt));
}

function stepTimeout(task: ExternalTask): number {
  return Math.min(task.policy.timeoutMs ?? EXTERNAL_STEP_TIMEOUT_MS, EXTERNAL_STEP_TIMEOUT_MS);
}

/** What the attempt's summary says of its job, so each attempt's record names the job it waited on. */
function jobSummary(job: ExternalJobRecord): Summary {
  return { externalJob: { adapter: job.adapter, handle: JSON.parse(job.handle) as unknown, key: job.key, ...(job.link ? { link: job.link } : {}) } };
}

function describe(job: ExternalJobRecord): string {
  return `${job.adapter} job ${job.handle}`;
}

function iso(at: number): string {
  return new Date(at).toISOString();
}
