import { existsSync, readFileSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { randomBytes } from "node:crypto";
import type { Clock } from "../core/model/clock.ts";
import { DefinitionError, UsageError } from "../core/model/errors.ts";
import { runIdFor } from "../core/model/run-id.ts";
import type { Params, Pipeline } from "../core/pipeline/types.ts";
import { parseBusinessDate, parseInstant } from "../core/time/dates.ts";
import type { Interval } from "../core/time/interval.ts";
import type { Due } from "../core/time/timetable.ts";
import type { AttemptRecord, ClaimedAttempt, RunRecord, Store, TaskInstanceRecord } from "../store/port.ts";
import { StoreConflictError } from "../store/port.ts";
import { executeRun } from "./executor/execute-run.ts";
import { saveVersion, taskInstancesOf } from "./pipeline-records.ts";

export interface EngineOptions {
  store: Store;
  clock: Clock;
  stateDir: string;
  pipelines: readonly Pipeline[];
  /** Where command tasks run when they name no cwd. */
  projectDir?: string;
  random?: () => number;
}

export interface RunRequest {
  /** Who asked: a flag, else IDEM_USER, else the OS user. */
  actor?: string;
  reason?: string;
  /** Overrides of the pipeline's params for this run. */
  params?: Params;
  concurrency?: number;
  cancel?: AbortSignal;
  onAttempt?: (claim: ClaimedAttempt, outcome: { taskState: string | null; errorMessage: string | null }) => void;
}

export interface RunResult {
  run: RunRecord;
  /** False when the run already existed and was run again. */
  created: boolean;
  tasks: TaskInstanceRecord[];
}

/**
 * What every surface (CLI, HTTP, UI) calls. It translates intentions into store operations and
 * executions; it never reads the wall clock itself.
 */
export class Engine {
  readonly store: Store;
  readonly clock: Clock;
  readonly stateDir: string;
  readonly #pipelines: Map<string, Pipeline>;
  readonly #projectDir: string;
  readonly #random: () => number;
  readonly workerId: string;

  constructor(options: EngineOptions) {
    this.store = options.store;
    this.clock = options.clock;
    this.stateDir = options.stateDir;
    this.#pipelines = new Map(options.pipelines.map((p) => [p.id, p]));
    this.#projectDir = options.projectDir ?? process.cwd();
    this.#random = options.random ?? Math.random;
    this.workerId = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  }

  pipelines(): Pipeline[] {
    return [...this.#pipelines.values()];
  }

  pipeline(id: string): Pipeline {
    const found = this.#pipelines.get(id);
    if (!found) {
      const known = [...this.#pipelines.keys()];
      throw new UsageError(`unknown pipeline "${id}"` + (known.length ? ` (known: ${known.join(", ")})` : " (no pipelines loaded)"));
    }
    return found;
  }

  /** The interval a business date names under the pipeline's schedule. */
  intervalForDate(pipelineId: string, date: string): Interval {
    const pipeline = this.pipeline(pipelineId);
    let businessDate: string;
    try {
      businessDate = parseBusinessDate(date);
    } catch (error) {
      throw new UsageError((error as Error).message, { pipeline: pipelineId });
    }
    try {
      return pipeline.schedule.intervalForDate(businessDate);
    } catch (error) {
      throw new UsageError((error as Error).message, { pipeline: pipelineId });
    }
  }

  /** An interval given by its bounds (for schedules that are not daily). */
  intervalBetween(pipelineId: string, start: string, end: string): Interval {
    const pipeline = this.pipeline(pipelineId);
    const tz = pipeline.schedule.timezone;
    let startMs: number;
    let endMs: number;
    try {
      startMs = parseInstant(start, tz);
      endMs = parseInstant(end, tz);
    } catch (error) {
      throw new UsageError((error as Error).message, { pipeline: pipelineId });
    }
    if (endMs <= startMs) throw new UsageError(`--end ${end} is not after --start ${start}`, { pipeline: pipelineId });
    const atStart = pipeline.schedule.intervalAt(startMs);
    if (pipeline.schedule.kind !== "manual" && (atStart.start !== startMs || atStart.end !== endMs)) {
      throw new UsageError(
        `${start}..${end} is not an interval of the schedule (${pipeline.schedule.describe()}); the interval there is ` +
          `${new Date(atStart.start).toISOString()}..${new Date(atStart.end).toISOString()}`,
        { pipeline: pipelineId },
      );
    }
    return { ...atStart, start: startMs, end: endMs };
  }

  /**
   * Runs the pipeline for one interval in this process and waits for the end. The first call
   * creates the run; a later call for the same interval runs that same run again.
   */
  async runInterval(pipelineId: string, interval: Interval, request: RunRequest = {}): Promise<RunResult> {
    const pipeline = this.pipeline(pipelineId);
    this.#assertOwned(pipeline, interval);
    const actor = request.actor ?? defaultActor();
    const now = this.clock.now();
    await saveVersion(this.store, pipeline, now);
    const params = request.params ?? {};
    const runId = runIdFor(pipeline.id, interval);
    const { run, created } = await this.store.createRunIfAbsent({
      runId,
      pipelineId: pipeline.id,
      intervalStart: interval.start,
      intervalEnd: interval.end,
      businessDate: interval.businessDate,
      graphVersion: pipeline.version,
      trigger: "manual",
      triggeredBy: actor,
      reason: request.reason ?? null,
      params,
      tasks: taskInstancesOf(pipeline),
      createdAt: now,
    });
    if (!created) {
      try {
        await this.store.rerun({ runId: run.runId, graphVersion: pipeline.version, tasks: taskInstancesOf(pipeline), params, at: now });
      } catch (error) {
        if (error instanceof StoreConflictError) throw new UsageError(error.message, { pipeline: pipelineId });
        throw error;
      }
    }
    await this.store.appendAudit({
      at: now,
      actor,
      action: created ? "trigger" : "rerun",
      pipelineId: pipeline.id,
      runId: run.runId,
      reason: request.reason ?? null,
      graphVersion: pipeline.version,
      details: { businessDate: interval.businessDate, params },
    });
    const finished = await executeRun({
      store: this.store,
      pipeline,
      runId: run.runId,
      clock: this.clock,
      stateDir: this.stateDir,
      workerId: this.workerId,
      concurrency: request.concurrency ?? 4,
      defaultCwd: this.#projectDir,
      cancel: request.cancel,
      random: this.#random,
      onAttempt: request.onAttempt,
    });
    return { run: finished, created, tasks: inTaskOrder(pipeline, await this.store.listTaskInstances(run.runId)) };
  }

  async runForDate(pipelineId: string, date: string, request: RunRequest = {}): Promise<RunResult> {
    return this.runInterval(pipelineId, this.intervalForDate(pipelineId, date), request);
  }

  async runs(pipelineId: string, limit = 50): Promise<RunRecord[]> {
    this.pipeline(pipelineId);
    return this.store.listRuns({ pipelineId, limit });
  }

  async run(runId: string): Promise<RunRecord> {
    const run = await this.store.getRun(runId);
    if (!run) throw new UsageError(`unknown run "${runId}" (run ids look like shop_orders@2026-09-01)`);
    return run;
  }

  /** A run's task instances, in the pipeline's task order when the pipeline is loaded. */
  async taskInstances(runId: string): Promise<TaskInstanceRecord[]> {
    const run = await this.run(runId);
    const tasks = await this.store.listTaskInstances(runId);
    const pipeline = this.#pipelines.get(run.pipelineId);
    return pipeline ? inTaskOrder(pipeline, tasks) : tasks;
  }

  async attempts(runId: string, taskId?: string): Promise<AttemptRecord[]> {
    await this.run(runId);
    return this.store.listAttempts(runId, taskId);
  }

  /** The log of one attempt: the given try, or the latest. */
  async log(runId: string, taskId: string, tryNumber?: number): Promise<{ attempt: AttemptRecord; text: string }> {
    const attempts = await this.attempts(runId, taskId);
    if (attempts.length === 0) {
      const tasks = await this.store.listTaskInstances(runId);
      if (!tasks.some((t) => t.taskId === taskId)) throw new UsageError(`run ${runId} has no task "${taskId}"`);
      throw new UsageError(`task ${taskId} of run ${runId} has not run yet`);
    }
    const attempt = tryNumber === undefined ? attempts.at(-1)! : attempts.find((a) => a.tryNumber === tryNumber);
    if (!attempt) {
      throw new UsageError(`task ${taskId} of run ${runId} has no try ${tryNumber} (tries: ${attempts.map((a) => a.tryNumber).join(", ")})`);
    }
    return { attempt, text: existsSync(attempt.logPath) ? readFileSync(attempt.logPath, "utf8") : "" };
  }

  /** The next `count` runs the schedule will create after now. */
  preview(pipelineId: string, count: number): Due[] {
    const pipeline = this.pipeline(pipelineId);
    const from = Math.max(this.clock.now(), pipeline.start === null ? -Infinity : pipeline.start - 1);
    return pipeline.schedule.preview(from, count).filter((d) => pipeline.end === null || d.interval.start < pipeline.end);
  }

  #assertOwned(pipeline: Pipeline, interval: Interval): void {
    if (pipeline.start !== null && interval.start < pipeline.start) {
      throw new UsageError(`${interval.businessDate} is before the pipeline's start (${pipeline.definition.start === null ? "" : new Date(pipeline.start).toISOString()})`, { pipeline: pipeline.id });
    }
    if (pipeline.end !== null && interval.start >= pipeline.end) {
      throw new UsageError(`${interval.businessDate} is after the pipeline's end`, { pipeline: pipeline.id });
    }
  }
}

function inTaskOrder(pipeline: Pipeline, tasks: TaskInstanceRecord[]): TaskInstanceRecord[] {
  const order = [...pipeline.tasks.keys()];
  const rank = (id: string) => (order.indexOf(id) + 1 || order.length + 1);
  return [...tasks].sort((a, b) => rank(a.taskId) - rank(b.taskId) || a.taskId.localeCompare(b.taskId));
}

/** The acting user: IDEM_USER, else the OS user. (A CLI flag, when given, comes first.) */
export function defaultActor(): string {
  if (process.env.IDEM_USER) return process.env.IDEM_USER;
  try {
    return userInfo().username;
  } catch {
    return "unknown";
  }
}
