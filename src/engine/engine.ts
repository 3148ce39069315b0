import { existsSync, readFileSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { randomBytes } from "node:crypto";
import type { Clock } from "../core/model/clock.ts";
import { DefinitionError, UsageError } from "../core/model/errors.ts";
import { runIdFor } from "../core/model/run-id.ts";
import type { Params, Pipeline } from "../core/pipeline/types.ts";
import { formatInstant, parseBusinessDate, parseInstant } from "../core/time/dates.ts";
import { isValidId } from "../core/model/ids.ts";
import type { Interval } from "../core/time/interval.ts";
import type { Due } from "../core/time/timetable.ts";
import type { AttemptRecord, ClaimedAttempt, PipelineState, PoolUsage, RunRecord, Store, TaskInstanceRecord } from "../store/port.ts";
import { StoreConflictError } from "../store/port.ts";
import { executeRun } from "./executor/execute-run.ts";
import { expectedRuns, type ExpectedRun } from "./scheduler/ledger.ts";
import { explainRun } from "./why.ts";
import { saveVersion, taskInstancesOf } from "./pipeline-records.ts";

/** A worker not seen for this long is taken for dead by `idem why`. */
const WORKER_ALIVE_MS = 60_000;

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

  async pause(pipelineId: string, request: { note?: string; actor?: string } = {}): Promise<PipelineState> {
    return this.#setPaused(pipelineId, true, request);
  }

  async unpause(pipelineId: string, request: { note?: string; actor?: string } = {}): Promise<PipelineState> {
    return this.#setPaused(pipelineId, false, request);
  }

  async #setPaused(pipelineId: string, paused: boolean, request: { note?: string; actor?: string }): Promise<PipelineState> {
    const pipeline = this.pipeline(pipelineId);
    const actor = request.actor ?? defaultActor();
    const at = this.clock.now();
    const state = await this.store.setPaused({ pipelineId, paused, note: request.note ?? null, actor, at });
    await this.store.appendAudit({
      at, actor, action: paused ? "pause" : "unpause", pipelineId, reason: request.note ?? null, graphVersion: pipeline.version,
    });
    return state;
  }

  /** The ledger of expected runs over [from, to), default the last `limit` intervals that fired. */
  async expected(pipelineId: string, range: { from?: string; to?: string; limit?: number } = {}): Promise<ExpectedRun[]> {
    const pipeline = this.pipeline(pipelineId);
    const now = this.clock.now();
    const tz = pipeline.schedule.timezone;
    const parse = (value: string, flag: string) => {
      try {
        return parseInstant(value, tz);
      } catch (error) {
        throw new UsageError(`${flag}: ${(error as Error).message}`, { pipeline: pipelineId });
      }
    };
    const to = range.to ? parse(range.to, "--to") : (pipeline.schedule.nextDue(now)?.interval.start ?? now);
    let from: number;
    if (range.from) from = parse(range.from, "--from");
    else {
      const limit = range.limit ?? 30;
      let cursor = to;
      for (let i = 0; i < limit; i++) {
        const previous = pipeline.schedule.intervalAt(cursor - 1);
        if (pipeline.start !== null && previous.start < pipeline.start) break;
        cursor = previous.start;
      }
      from = cursor;
    }
    return expectedRuns(this.store, pipeline, { from, to }, now);
  }

  async pools(): Promise<PoolUsage[]> {
    return this.store.listPools();
  }

  async setPool(name: string, slots: number, request: { description?: string; actor?: string } = {}): Promise<void> {
    if (!isValidId(name)) throw new UsageError(`invalid pool name ${JSON.stringify(name)}`);
    if (!Number.isInteger(slots) || slots < 0) throw new UsageError(`--slots ${slots}: expected a whole number >= 0`);
    const at = this.clock.now();
    await this.store.setPool({ name, slots, description: request.description ?? null, at });
    await this.store.appendAudit({ at, actor: request.actor ?? defaultActor(), action: "pool-set", pipelineId: null, details: { pool: name, slots } });
  }

  async deletePool(name: string, request: { actor?: string } = {}): Promise<void> {
    if (!(await this.store.deletePool(name))) throw new UsageError(`no pool named "${name}"`);
    await this.store.appendAudit({ at: this.clock.now(), actor: request.actor ?? defaultActor(), action: "pool-delete", pipelineId: null, details: { pool: name } });
  }

  /** Why a run (or one task of it) is not running, in words; also for a run that does not exist yet. */
  async why(runId: string, taskId?: string): Promise<string[]> {
    const now = this.clock.now();
    const tz = (id: string) => this.#pipelines.get(id)?.schedule.timezone ?? "UTC";
    const run = await this.store.getRun(runId);
    const pipelineId = runId.includes("@") ? runId.slice(0, runId.indexOf("@")) : runId;
    if (!run) return this.#whyNoRun(runId, pipelineId, now);
    return explainRun(
      {
        store: this.store,
        now,
        workerAliveMs: WORKER_ALIVE_MS,
        maxActiveTasks: this.#pipelines.get(run.pipelineId)?.maxActiveTasks,
        formatTime: (ms) => formatInstant(ms, tz(run.pipelineId)),
      },
      runId,
      taskId,
    );
  }

  async #whyNoRun(runId: string, pipelineId: string, now: number): Promise<string[]> {
    const pipeline = this.pipeline(pipelineId);
    const date = runId.slice(runId.indexOf("@") + 1);
    const interval = this.intervalForDate(pipelineId, date);
    const firesAt = pipeline.schedule.firesAt(interval);
    const state = await this.store.pipelineState(pipelineId, now);
    const lines = [`run ${runId} does not exist yet`];
    if (state.paused) lines.push(`pipeline ${pipelineId} is paused${state.pausedNote ? `: ${state.pausedNote}` : ""}`);
    if (firesAt > now) lines.push(`not due until ${formatInstant(firesAt, pipeline.schedule.timezone)}`);
    const live = await this.store.listRuns({ pipelineId, states: ["queued", "running"], limit: 1000 });
    if (live.length >= pipeline.maxActiveRuns) {
      lines.push(`run cap reached: ${live.length} of ${pipeline.maxActiveRuns} runs active (${live.slice(0, 5).map((r) => r.runId).join(", ")}${live.length > 5 ? ", ..." : ""})`);
    }
    const lead = await this.store.getLead("scheduler");
    if (!lead || lead.expiresAt < now) lines.push("no scheduler is running: start `idem scheduler` (or `idem dev`)");
    return lines;
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
