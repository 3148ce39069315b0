import { dirname, join } from "node:path";
import type { Clock } from "../../core/model/clock.ts";
import { attemptLogPath } from "../../core/model/log-path.ts";
import { parseMappedTaskId, taskOfInstance } from "../../core/policy/fan-out.ts";
import type { Pipeline, WatermarkAccess } from "../../core/pipeline/types.ts";
import type { ClaimedAttempt, ExternalJobRecord, ExternalJobStore, RunStore } from "../../store/port.ts";
import { AttemptLog } from "../executor/attempt-log.ts";
import { EXTERNAL_STEP_TIMEOUT_MS } from "../executor/kinds/external.ts";
import type { TaskCodeRunner } from "../executor/task-code-runner.ts";
import type { SecretMasker } from "../secrets/masker.ts";
import type { EngineEvents } from "../events/engine-events.ts";

export interface ExternalCancels {
  store: ExternalJobStore & Pick<RunStore, "getRun">;
  clock: Clock;
  pipeline(id: string): Pipeline | undefined;
  pipelineIds: readonly string[];
  runner: TaskCodeRunner;
  logDir: string;
  projectDir: string;
  watermarks: WatermarkAccess;
  masker?: SecretMasker;
  events: EngineEvents;
}

/** At most this many jobs a pass cancels; the next pass takes the rest. */
const CANCELS_PER_PASS = 20;

/**
 * Cancels the remote jobs whose task instance no longer waits on them (its backfill was
 * cancelled, it was settled by hand, its last attempt was lost with no try left): the store marks
 * them in the transaction that made it so, and any worker that has the pipeline loaded cancels
 * them here, with the task's own `cancel`, where task code runs, and records that it did. A
 * cancel that fails is tried again on the next pass. Answers how many were cancelled.
 */
export async function cancelRequestedJobs(o: ExternalCancels): Promise<number> {
  if (o.pipelineIds.length === 0) return 0;
  let cancelled = 0;
  for (const job of await o.store.externalJobsToCancel(o.pipelineIds, CANCELS_PER_PASS)) {
    try {
      if (await cancelOne(o, job)) cancelled++;
    } catch (error) {
      o.events.emit("external-job:cancel-failed", { ...named(job), error: (error as Error).message });
    }
  }
  return cancelled;
}

function named(job: ExternalJobRecord) {
  return { runId: job.runId, taskId: job.taskId, adapter: job.adapter, handle: job.handle };
}

async function cancelOne(o: ExternalCancels, job: ExternalJobRecord): Promise<boolean> {
  const pipeline = o.pipeline(job.pipelineId);
  const task = pipeline ? taskOfInstance(pipeline.tasks, job.taskId) : undefined;
  const run = await o.store.getRun(job.runId);
  if (!pipeline || !task || task.kind !== "external" || !run) return false;
  // The cancel runs as a step of no attempt: its id is the job's, negated, so it never meets a real one.
  const claim: ClaimedAttempt = {
    attemptId: -job.jobId, runId: job.runId, pipelineId: job.pipelineId, taskId: job.taskId, tryNumber: job.tryNumber, maxTries: job.tryNumber,
    intervalStart: run.intervalStart, intervalEnd: run.intervalEnd, businessDate: run.businessDate, graphVersion: run.graphVersion,
    params: run.params, logPath: "", leaseExpiresAt: 0, firstStartedAt: job.submittedAt, trigger: run.trigger, backfillId: run.backfillId, readySince: null,
    codeVersion: run.codeVersion, mapKey: parseMappedTaskId(job.taskId)?.key ?? null, mapItem: null,
  };
  const path = join(dirname(attemptLogPath(o.logDir, job.runId, job.taskId, job.tryNumber)), `cancel-job-${job.jobId}.log`);
  const log = new AttemptLog(path, o.clock, { masker: o.masker });
  try {
    log.line("INFO", `cancelling ${job.adapter} job ${job.handle}: ${job.note ?? "its task instance no longer waits on it"}`);
    const result = await o.runner.call({
      pipeline, task, claim: { ...claim, logPath: path }, log, projectFrozen: [], watermarks: o.watermarks, connections: {}, upstream: {},
      traceparent: null, projectDir: o.projectDir, timeoutMs: EXTERNAL_STEP_TIMEOUT_MS, graceMs: task.killGraceMs,
      external: { op: "cancel", handle: JSON.parse(job.handle) as unknown },
    });
    if (result.outcome !== "success") {
      const why = result.outcome === "failed" ? result.errorMessage : result.outcome;
      log.line("ERROR", `cancel failed: ${why}`);
      o.events.emit("external-job:cancel-failed", { ...named(job), error: why });
      return false;
    }
    const ended = await o.store.endExternalJob({ jobId: job.jobId, state: "cancelled", at: o.clock.now(), note: null, by: null });
    log.line("INFO", ended ? "cancelled" : "cancelled; another process had recorded it first");
    if (ended) o.events.emit("external-job:cancelled", { ...named(job), note: job.note });
    return ended;
  } finally {
    log.close();
  }
}
