import type { Clock } from "../../core/model/clock.ts";
import { runIdFor } from "../../core/model/run-id.ts";
import { retryDelay } from "../../core/policy/retry.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import { describeFrozen, frozenPeriodOf, type FrozenPeriod } from "../../core/policy/frozen.ts";
import type { Interval } from "../../core/time/interval.ts";
import type { BackfillItem, BackfillRecord, Store } from "../../store/port.ts";
import { saveVersion, taskInstancesOf } from "../pipeline-records.ts";
import { restateTrailingWindow, type RestateEnvironment } from "./restate.ts";

export interface SchedulerOptions {
  store: Store;
  clock: Clock;
  pipelines: readonly Pipeline[];
  /** Who this scheduler is, for the leader lease: host:pid:random. */
  holder: string;
  /** A leader that stops renewing for this long is replaced. Default 15 s. */
  leaseTtlMs?: number;
  /** Longest sleep between ticks. Default 1 s. */
  tickMs?: number;
  random?: () => number;
  log?: (line: string) => void;
  /** Called when runs were created or attempts handed back, to wake workers. */
  onWork?: () => void;
  /** Frozen periods of the project; with each pipeline's own, their intervals get no scheduled run. */
  frozen?: readonly FrozenPeriod[];
  /** "backfills": only advance backfills (a CLI following one backfill); default "all". */
  scope?: "all" | "backfills";
}

export interface TickResult {
  leader: boolean;
  leaderHolder: string;
  runsCreated: number;
  attemptsLost: number;
  /** When the next tick should happen at the latest. */
  nextTickAt: number;
}

/** How many intervals one tick may enumerate for catch-up "latest" (a year of hourly fits). */
const MAX_LATEST_SCAN = 20_000;

/**
 * Creates one run per due interval (and per published business date for data-triggered
 * pipelines), and turns expired attempt leases into lost attempts. Only the holder of the
 * scheduler lease acts; the others stand by. Every write is idempotent (a unique key per
 * interval, a cursor that only moves forward), so a deposed leader cannot create a twin.
 */
export class Scheduler {
  readonly #o: Required<Omit<SchedulerOptions, "log" | "onWork">> & Pick<SchedulerOptions, "log" | "onWork">;
  readonly #savedVersions = new Set<string>();

  constructor(options: SchedulerOptions) {
    this.#o = { leaseTtlMs: 15_000, tickMs: 1_000, random: Math.random, frozen: [], scope: "all", ...options };
  }

  get #restateEnvironment(): RestateEnvironment {
    return { store: this.#o.store, frozen: this.#o.frozen, log: this.#o.log, saveVersion: (p) => this.#saveVersionOnce(p, this.#o.clock.now()) };
  }

  async #saveVersionOnce(pipeline: Pipeline, now: number): Promise<void> {
    if (this.#savedVersions.has(pipeline.version)) return;
    await saveVersion(this.#o.store, pipeline, now);
    this.#savedVersions.add(pipeline.version);
  }

  async tick(): Promise<TickResult> {
    const { store, clock, holder, leaseTtlMs, tickMs } = this.#o;
    const now = clock.now();
    const lead = await store.tryLead({ role: "scheduler", holder, now, ttlMs: leaseTtlMs });
    if (!lead.leader) {
      return { leader: false, leaderHolder: lead.holder, runsCreated: 0, attemptsLost: 0, nextTickAt: now + Math.min(tickMs, leaseTtlMs / 3) };
    }
    const attemptsLost = await this.#reapExpiredLeases(now);
    let runsCreated = 0;
    let nextTickAt = now + tickMs;
    runsCreated += await this.#advanceBackfills(now);
    for (const pipeline of this.#o.scope === "all" ? this.#o.pipelines : []) {
      runsCreated += await this.#schedule(pipeline, now);
      if (pipeline.restate) runsCreated += await restateTrailingWindow(this.#restateEnvironment, pipeline, now);
      const next = pipeline.schedule.nextDue(now);
      if (next) nextTickAt = Math.min(nextTickAt, next.firesAt);
    }
    if (runsCreated + attemptsLost > 0) this.#o.onWork?.();
    return { leader: true, leaderHolder: holder, runsCreated, attemptsLost, nextTickAt: Math.min(nextTickAt, now + leaseTtlMs / 3) };
  }

  /**
   * Ticks until `signal` aborts, sleeping on the clock between ticks; `subscribe` lets other
   * processes wake it early (a run ended, so the run cap has room). Resigns the lease at the end.
   */
  async run(signal: AbortSignal, hooks: { subscribe?: (wake: () => void) => Promise<() => void>; onTick?: (t: TickResult) => void } = {}): Promise<void> {
    let wake: () => void = () => {};
    const unsubscribe = await hooks.subscribe?.(() => wake());
    try {
      while (!signal.aborted) {
        let result: TickResult;
        try {
          result = await this.tick();
        } catch (error) {
          // A store out of reach for a while must not end the scheduler: try again shortly.
          this.#o.log?.(`tick failed, trying again: ${(error as Error).message}`);
          await this.#o.clock.sleep(Math.min(this.#o.tickMs, 2_000), signal);
          continue;
        }
        hooks.onTick?.(result);
        const early = new AbortController();
        const onAbort = () => early.abort();
        signal.addEventListener("abort", onAbort, { once: true });
        // Wakes from other processes only matter to the leader; a standby waits for the lease.
        wake = result.leader ? () => early.abort() : () => {};
        await this.#o.clock.sleep(Math.max(0, result.nextTickAt - this.#o.clock.now()), early.signal);
        signal.removeEventListener("abort", onAbort);
      }
    } finally {
      unsubscribe?.();
      await this.#o.store.resignLead("scheduler", this.#o.holder);
    }
  }

  async #schedule(pipeline: Pipeline, now: number): Promise<number> {
    const { store } = this.#o;
    const state = await store.pipelineState(pipeline.id, now);
    if (state.paused) return 0;
    let created = 0;
    if (pipeline.triggerOn.length > 0) created += await this.#scheduleFromDatasets(pipeline, now);
    if (pipeline.schedule.kind === "manual") return created;

    const room = pipeline.maxActiveRuns - (await store.countLiveRuns(pipeline.id));
    if (room <= 0) return created;
    const from = state.scheduleCursor ?? pipeline.start ?? pipeline.schedule.nextDue(state.createdAt)?.interval.start;
    if (from === undefined) return created;
    const owned = (d: { interval: Interval }) => pipeline.end === null || d.interval.start < pipeline.end;

    if (pipeline.catchup === "latest") {
      const due = pipeline.schedule.dueBetween(from, now, MAX_LATEST_SCAN).filter(owned);
      const newest = due.at(-1);
      if (!newest) return created;
      if (due.length > 1) {
        const passed = due.slice(0, -1).map((d) => d.interval);
        await store.skipIntervals({
          pipelineId: pipeline.id,
          intervals: passed.map((i) => ({ start: i.start, end: i.end, businessDate: i.businessDate })),
          reason: `catch-up "latest": ${newest.interval.businessDate} was due too, so only it runs`,
          at: now,
          cursor: passed.at(-1)!.end,
        });
        this.#o.log?.(`${pipeline.id}: skipped ${passed.length} interval(s) by catch-up policy "latest"`);
      }
      return created + (await this.#createRun(pipeline, newest.interval, now, "schedule", "scheduler", null));
    }
    for (const due of pipeline.schedule.dueBetween(from, now, room).filter(owned)) {
      const frozen = frozenPeriodOf([...pipeline.frozen, ...this.#o.frozen], due.interval.businessDate);
      if (frozen) {
        const i = due.interval;
        await store.skipIntervals({ pipelineId: pipeline.id, intervals: [{ start: i.start, end: i.end, businessDate: i.businessDate }], reason: describeFrozen(frozen), at: now, cursor: i.end });
        continue;
      }
      created += await this.#createRun(pipeline, due.interval, now, "schedule", "scheduler", null);
    }
    return created;
  }

  async #scheduleFromDatasets(pipeline: Pipeline, now: number): Promise<number> {
    const { store } = this.#o;
    const waits = await store.collectDatasetEvents(pipeline.id, pipeline.triggerOn);
    let created = 0;
    for (const [businessDate, datasets] of waits) {
      if (!pipeline.triggerOn.every((d) => datasets.has(d))) continue;
      let interval: Interval;
      try {
        interval = pipeline.schedule.intervalForDate(businessDate);
      } catch (error) {
        this.#o.log?.(`${pipeline.id}: cannot run for ${businessDate}: ${(error as Error).message}`);
        await store.consumeDatasetWaits(pipeline.id, businessDate);
        continue;
      }
      if (pipeline.start !== null && interval.start < pipeline.start) {
        await store.consumeDatasetWaits(pipeline.id, businessDate);
        continue;
      }
      const existing = await store.getRun(runIdFor(pipeline.id, interval));
      const by = `datasets: ${pipeline.triggerOn.join(", ")}`;
      if (!existing) {
        created += await this.#createRun(pipeline, interval, now, "data", by, "upstream datasets published");
      } else if (existing.state === "queued" || existing.state === "running") {
        continue; // keep the events; the run starts again once this one ends
      } else {
        await saveVersion(store, pipeline, now);
        await store.rerun({ runId: existing.runId, graphVersion: pipeline.version, tasks: taskInstancesOf(pipeline), params: existing.params, at: now });
        await store.appendAudit({
          at: now, actor: "scheduler", action: "data-rerun", pipelineId: pipeline.id, runId: existing.runId,
          reason: "upstream datasets published again", graphVersion: pipeline.version, details: { businessDate },
        });
        created++;
      }
      await store.consumeDatasetWaits(pipeline.id, businessDate);
    }
    return created;
  }

  async #createRun(
    pipeline: Pipeline,
    interval: Interval,
    now: number,
    trigger: "schedule" | "data",
    triggeredBy: string,
    reason: string | null,
  ): Promise<number> {
    await this.#saveVersionOnce(pipeline, now);
    const { created } = await this.#o.store.createRunIfAbsent({
      cursor: trigger === "schedule" ? interval.end : undefined,
      runId: runIdFor(pipeline.id, interval),
      pipelineId: pipeline.id,
      intervalStart: interval.start,
      intervalEnd: interval.end,
      businessDate: interval.businessDate,
      graphVersion: pipeline.version,
      trigger,
      triggeredBy,
      reason,
      params: {},
      tasks: taskInstancesOf(pipeline),
      createdAt: now,
    });
    if (created) this.#o.log?.(`created run ${runIdFor(pipeline.id, interval)} (${trigger})`);
    return created ? 1 : 0;
  }

  /**
   * Starts the next planned intervals of each running backfill under the backfill's own cap, and
   * closes backfills whose runs have all ended. Pools still apply when the runs' tasks are
   * claimed, and live scheduled runs are claimed first.
   */
  async #advanceBackfills(now: number): Promise<number> {
    const { store } = this.#o;
    let started = 0;
    for (const backfill of await store.listBackfills({ live: true })) {
      if (backfill.state !== "running") continue;
      const pipeline = this.#o.pipelines.find((p) => p.id === backfill.pipelineId);
      if (!pipeline) continue;
      const live = await store.countLiveBackfillRuns(backfill.backfillId);
      const room = backfill.maxActiveRuns - live;
      const pending = room > 0 ? await store.pendingBackfillItems(backfill.backfillId, room) : [];
      for (const item of pending) {
        started += await this.#startBackfillItem(pipeline, backfill, item, now);
        await store.markBackfillItemStarted(backfill.backfillId, item.seq);
      }
      if (pending.length === 0 && live === 0 && (await store.pendingBackfillItems(backfill.backfillId, 1)).length === 0) {
        const progress = await store.backfillProgress(backfill.backfillId);
        const state = progress.failed > 0 ? "failed" : "completed";
        await store.setBackfillState(backfill.backfillId, state, now);
        this.#o.log?.(`backfill ${backfill.backfillId} ${state}: ${progress.succeeded} succeeded, ${progress.failed} failed`);
      }
    }
    return started;
  }

  async #startBackfillItem(pipeline: Pipeline, backfill: BackfillRecord, item: BackfillItem, now: number): Promise<number> {
    const { store } = this.#o;
    const selected = backfill.taskIds ? new Set(backfill.taskIds) : null;
    const tasks = taskInstancesOf(pipeline, selected);
    const existing = await store.getRun(item.runId);
    if (existing && (existing.state === "queued" || existing.state === "running")) {
      this.#o.log?.(`backfill ${backfill.backfillId}: ${item.runId} is already ${existing.state}; left alone`);
      return 0;
    }
    await saveVersion(store, pipeline, now);
    if (!existing) {
      await store.createRunIfAbsent({
        backfillId: backfill.backfillId,
        runId: item.runId,
        pipelineId: pipeline.id,
        intervalStart: item.intervalStart,
        intervalEnd: item.intervalEnd,
        businessDate: item.businessDate,
        graphVersion: pipeline.version,
        trigger: "backfill",
        triggeredBy: backfill.actor,
        reason: backfill.reason,
        params: {},
        tasks,
        createdAt: now,
      });
    } else {
      await store.rerun({
        runId: existing.runId,
        graphVersion: pipeline.version,
        tasks: taskInstancesOf(pipeline),
        taskIds: selected ? [...selected] : undefined,
        params: existing.params,
        at: now,
        backfill: { backfillId: backfill.backfillId, triggeredBy: backfill.actor, reason: backfill.reason },
      });
    }
    this.#o.log?.(`backfill ${backfill.backfillId}: started ${item.runId} (${item.action})`);
    return 1;
  }

  /** A worker that stopped renewing its lease is presumed dead: its attempts are lost and retried. */
  async #reapExpiredLeases(now: number): Promise<number> {
    const { store } = this.#o;
    let lost = 0;
    for (const expired of await store.listExpiredAttempts(now, 500)) {
      const task = this.#o.pipelines.find((p) => p.id === expired.pipelineId)?.tasks.get(expired.taskId);
      const retryAt = now + (task ? retryDelay(task.policy, expired.tryNumber + 1, this.#o.random) : 0);
      const outcome = await store.loseAttempt({ attemptId: expired.attemptId, now, retryAt });
      if (outcome.accepted) {
        lost++;
        this.#o.log?.(`${expired.runId} ${expired.taskId} try ${expired.tryNumber}: lost (worker ${expired.workerId} stopped renewing its lease); now ${outcome.taskState}`);
      }
    }
    return lost;
  }
}
