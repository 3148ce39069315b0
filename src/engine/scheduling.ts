import { ArgumentError } from "../core/model/errors.ts";
import { formatInstant, parseInstant } from "../core/time/dates.ts";
import type { Due } from "../core/time/timetable.ts";
import type { PipelineState } from "../store/port.ts";
import { defaultActor, tellAudit, type Acting } from "./acting.ts";
import { estimateRestatement, type RestateEstimate } from "./backfill/restate-estimate.ts";
import type { EngineContext } from "./engine-context.ts";
import type { FrozenPeriods } from "./frozen-periods.ts";
import { intervalForDate, upcoming } from "./intervals.ts";
import { WORKER_ALIVE_MS } from "./metrics/store-facts.ts";
import { expectedRuns, recentIntervalsFrom, type ExpectedRun } from "./scheduler/ledger.ts";
import { notifyScheduler } from "./worker/wakeup.ts";
import { explainMissingRun, explainRun } from "./why.ts";

type Context = Pick<EngineContext, "store" | "clock" | "stateDir" | "catalog" | "pipeline">;

/**
 * The schedule as an operator sees and steers it: pause and unpause, what it will fire next and
 * what a starting scheduler will do, the ledger of expected runs, and why a run is not running.
 */
export class Scheduling {
  readonly #e: Context;
  readonly #frozen: FrozenPeriods;
  /** The "did not run" grace the ledger counts a due interval as pending for. */
  readonly #graceMs: number;

  constructor(context: Context, frozen: FrozenPeriods, graceMs: number) {
    this.#e = context;
    this.#frozen = frozen;
    this.#graceMs = graceMs;
  }

  async setPaused(pipelineId: string, paused: boolean, request: { note?: string } & Acting): Promise<PipelineState> {
    const { store, clock } = this.#e;
    const pipeline = this.#e.pipeline(pipelineId);
    const actor = request.actor ?? defaultActor();
    const at = clock.now();
    const state = await store.setPaused({ pipelineId, paused, note: request.note ?? null, actor, at });
    notifyScheduler(this.#e.stateDir);
    tellAudit(request, await store.appendAudit({
      at, actor, action: paused ? "pause" : "unpause", pipelineId, reason: request.note ?? null, graphVersion: pipeline.version,
    }));
    return state;
  }

  /** The pipeline's scheduling state (paused, by whom, the schedule cursor). */
  async state(pipelineId: string): Promise<PipelineState> {
    this.#e.pipeline(pipelineId);
    return this.#e.store.pipelineState(pipelineId, this.#e.clock.now());
  }

  /** The next `count` runs the schedule will create after now. */
  preview(pipelineId: string, count: number): Due[] {
    return upcoming(this.#e.pipeline(pipelineId), this.#e.clock.now(), count);
  }

  /** What a scheduler starting now will do for each pipeline, one line each: catch-up and next fire (`scheduler/outlook.ts`). */
  async outlook(): Promise<string[]> {
    const { schedulerOutlook } = await import("./scheduler/outlook.ts");
    const env = { store: this.#e.store, preview: (id: string, n: number) => this.preview(id, n), frozenPeriods: (id: string) => this.#frozen.of(id) };
    return schedulerOutlook(env, this.#e.catalog.pipelines(), this.#e.clock.now());
  }

  /** What the pipeline's `restate` window adds to each scheduled interval, from recent durations; null without one. */
  async restateEstimate(pipelineId: string): Promise<RestateEstimate | null> {
    const pipeline = this.#e.pipeline(pipelineId);
    if (!pipeline.restate) return null;
    const pools = new Map((await this.#e.store.listPools()).map((p) => [p.name, p.slots]));
    return estimateRestatement(pipeline, await this.#e.store.taskDurations(pipeline.id, 100), pools);
  }

  /** The ledger of expected runs over [from, to), default the last `limit` intervals that fired. */
  async expected(pipelineId: string, range: { from?: string; to?: string; limit?: number }): Promise<ExpectedRun[]> {
    const pipeline = this.#e.pipeline(pipelineId);
    const now = this.#e.clock.now();
    const tz = pipeline.schedule.timezone;
    const parse = (value: string, argument: "from" | "to") => {
      try {
        return parseInstant(value, tz);
      } catch (error) {
        throw new ArgumentError(argument, (n) => `${n(argument)}: ${(error as Error).message}`, { pipeline: pipelineId });
      }
    };
    const to = range.to ? parse(range.to, "to") : (pipeline.schedule.nextDue(now)?.interval.start ?? now);
    const from = range.from ? parse(range.from, "from") : recentIntervalsFrom(pipeline, to, pipeline.start ?? -Infinity, range.limit ?? 30);
    return expectedRuns(this.#e.store, pipeline, { from, to }, now, { graceMs: this.#graceMs });
  }

  /** Why a run (or one task of it) is not running, in words; also for a run that does not exist yet. */
  async why(runId: string, taskId?: string): Promise<string[]> {
    const { store, catalog } = this.#e;
    const now = this.#e.clock.now();
    const tz = (id: string) => catalog.get(id)?.schedule.timezone ?? "UTC";
    const run = await store.getRun(runId);
    const pipelineId = runId.includes("@") ? runId.slice(0, runId.indexOf("@")) : runId;
    if (!run) {
      const pipeline = this.#e.pipeline(pipelineId);
      const interval = intervalForDate(pipeline, runId.slice(runId.indexOf("@") + 1));
      return explainMissingRun(store, pipeline, runId, interval, now);
    }
    return explainRun(
      {
        store,
        now,
        workerAliveMs: WORKER_ALIVE_MS,
        maxActiveTasks: catalog.get(run.pipelineId)?.maxActiveTasks,
        formatTime: (ms) => formatInstant(ms, tz(run.pipelineId)),
      },
      runId,
      taskId,
    );
  }
}
