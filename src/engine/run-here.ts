import { parseCodeChoice, rerunCode, type RerunCode } from "./records/code-choice.ts";
import type { Params } from "../core/pipeline/types.ts";
import { assertDeclaredParams } from "../core/pipeline/params.ts";
import type { Interval } from "../core/time/interval.ts";
import type { FrozenPeriod } from "../core/policy/frozen.ts";
import type { RunRecord, TaskInstanceRecord } from "../store/port.ts";
import { defaultActor } from "./acting.ts";
import type { EngineContext } from "./engine-context.ts";
import type { TaskCodeRunner } from "./executor/task-code-runner.ts";
import type { FrozenPeriods } from "./frozen-periods.ts";
import { assertOwned } from "./intervals.ts";
import { assertIntervalEnded } from "./manual-runs.ts";
import type { EngineEvents } from "./events/engine-events.ts";
import type { AttemptFinished } from "./events/event-map.ts";
import type { ConnectionConfig } from "./project/config.ts";
import { newRun, taskInstancesOf } from "./records/pipeline-records.ts";
import { refusalsTranslated } from "./records/store-refusals.ts";
import { inTaskOrder } from "./run-reads.ts";
import type { SecretMasker } from "./secrets/masker.ts";

export interface RunRequest {
  /** Who asked: a flag, else IDEM_USER, else the OS user. */
  actor?: string;
  reason?: string;
  /** Overrides of the pipeline's params for this run. */
  params?: Params;
  concurrency?: number;
  /** Run a frozen business date anyway; the reason is recorded. */
  openFrozen?: string;
  cancel?: AbortSignal;
  /** Told of each attempt of this run once its result is recorded. */
  onAttempt?: (attempt: AttemptFinished) => void;
  /** Look at the pipeline files this often while the run runs, as workers do (`reloadMs`). */
  reloadMs?: number;
  /** A run that exists runs again on `same` code (its own version, the default) or `latest`. */
  code?: string;
}

export interface RunResult {
  run: RunRecord;
  /** False when the run already existed and was run again. */
  created: boolean;
  tasks: TaskInstanceRecord[];
}

/** What a run in this process takes of the engine's config, as a worker would. */
export interface RunHereSettings {
  workerId: string;
  /** Attempts at once when the request names no number. */
  concurrency: number;
  workerLeaseMs: number | undefined;
  reloadMs: number | undefined;
  /** Where command tasks run when they name no cwd. */
  projectDir: string;
  random: () => number;
  /** The project's frozen periods, which every loader enforces too. */
  frozen: readonly FrozenPeriod[];
  connections: Record<string, ConnectionConfig>;
  logMaxBytes: number | null | undefined;
  masker: SecretMasker;
  withheldEnv: readonly string[];
  events: EngineEvents;
  taskRunner(size: number): TaskCodeRunner;
}

type Context = Pick<EngineContext, "store" | "clock" | "stateDir" | "catalog" | "pipeline">;

/** An operator's run of one interval in this process (`idem run`), waited for to its end. */
export class RunHere {
  readonly #e: Context;
  readonly #frozen: FrozenPeriods;
  readonly #settings: RunHereSettings;

  constructor(context: Context, frozen: FrozenPeriods, settings: RunHereSettings) {
    this.#e = context;
    this.#frozen = frozen;
    this.#settings = settings;
  }

  /**
   * Runs the pipeline for one interval in this process and waits for the end. The first call
   * creates the run; a later call for the same interval runs that same run again.
   */
  async run(pipelineId: string, interval: Interval, request: RunRequest): Promise<RunResult> {
    const { store, clock, catalog } = this.#e;
    const s = this.#settings;
    const pipeline = this.#e.pipeline(pipelineId);
    assertDeclaredParams(pipeline, request.params);
    assertOwned(pipeline, interval);
    const now = clock.now();
    assertIntervalEnded(pipeline, interval, now);
    this.#frozen.assertNotFrozen(pipeline, interval.businessDate, request.openFrozen);
    const actor = request.actor ?? defaultActor();
    await this.#frozen.recordVersion(pipeline, actor, now);
    const params = request.params ?? {};
    const { run, created } = await store.createRunIfAbsent(newRun(pipeline, interval, { trigger: "manual", triggeredBy: actor, reason: request.reason ?? null, params }, now));
    let code: RerunCode | null = null;
    if (!created) {
      // A previous `idem run` of this run killed on this host left attempts no one renews: they are lost now, not in a lease.
      const { recoverDeadHolders } = await import("./worker/dead-holders.ts");
      await recoverDeadHolders(store, now, { runId: run.runId });
      code = await rerunCode(run, pipeline, parseCodeChoice(request.code, "same"));
      const again = code.pipeline;
      await refusalsTranslated(
        // A run its process left unfinished is resumed: its task instances reattach to their remote jobs.
        () => store.rerun({ runId: run.runId, graphVersion: again.version, tasks: taskInstancesOf(again), params, at: now, resume: run.state === "queued" || run.state === "running", ...(code!.move ?? {}) }),
        { pipeline: pipelineId },
      );
    }
    await store.appendAudit({
      at: now,
      actor,
      action: created ? "trigger" : "rerun",
      pipelineId: pipeline.id,
      runId: run.runId,
      reason: request.reason ?? null,
      graphVersion: pipeline.version,
      details: {
        businessDate: interval.businessDate, params, ...(request.openFrozen ? { openFrozen: request.openFrozen } : {}),
        ...(code ? { code: { choice: code.choice, from: code.from, to: code.to } } : {}),
      },
    });
    // the executor loads only for a command that runs an interval, not for every engine
    const { executeRun } = await import("./worker/execute-run.ts");
    // Like a worker: each attempt runs the task's code as its file says when it starts.
    const reloadMs = request.reloadMs ?? s.reloadMs;
    const reload = reloadMs ? setInterval(() => void catalog.refresh().catch(() => {}), reloadMs) : null;
    const onAttempt = request.onAttempt;
    const stopTelling = onAttempt ? s.events.on("attempt:finished", (attempt) => attempt.runId === run.runId && onAttempt(attempt)) : () => {};
    const finished = await executeRun({
      store,
      pipeline,
      catalog,
      runId: run.runId,
      clock,
      stateDir: this.#e.stateDir,
      workerId: s.workerId,
      concurrency: request.concurrency ?? s.concurrency,
      leaseMs: s.workerLeaseMs,
      defaultCwd: s.projectDir,
      cancel: request.cancel,
      random: s.random,
      frozen: s.frozen,
      connections: s.connections,
      events: s.events,
      runner: s.taskRunner(request.concurrency ?? s.concurrency),
      logMaxBytes: s.logMaxBytes,
      masker: s.masker,
      withheldEnv: s.withheldEnv,
    }).finally(() => {
      if (reload) clearInterval(reload);
      stopTelling();
    });
    return { run: finished, created, tasks: inTaskOrder(pipeline, await store.listTaskInstances(run.runId)) };
  }
}
