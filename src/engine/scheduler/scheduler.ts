import type { SchedulerStatus } from "../events/process-status.ts";
import type { Clock } from "../../core/model/clock.ts";
import { runIdFor } from "../../core/model/run-id.ts";
import { Backoff } from "../../core/policy/backoff.ts";
import { retryDelay } from "../../core/policy/retry.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import { describeFrozen, frozenPeriodOf, type FrozenPeriod } from "../../core/policy/frozen.ts";
import type { Interval } from "../../core/time/interval.ts";
import type { BackfillItem, BackfillRecord, PipelineState, Store } from "../../store/port.ts";
import { latestCode, newRun, saveVersion, taskInstancesOf } from "../records/pipeline-records.ts";
import { rerunCode } from "../records/code-choice.ts";
import { recordFrozenPeriods } from "../records/frozen-records.ts";
import type { PipelineCatalog } from "../project/catalog.ts";
import { groupDatasetEvents } from "../../core/policy/data-trigger.ts";
import { nextDueOf } from "./next-due.ts";
import { restateTrailingWindow, type RestateEnvironment } from "./restate.ts";
import { DEFAULTS } from "../project/defaults.ts";
import { EngineEvents } from "../events/engine-events.ts";
import { collectBundles } from "../records/bundle-collection.ts";
import type { BundleCollectionSchedule } from "../project/defaults.ts";
import { codeOf } from "../project/code-of.ts";
import { formatDuration } from "../../core/time/duration.ts";

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
  /** Where it tells what it does (runs created, ticks, the lead taken or lost, ...). */
  events?: EngineEvents;
  /** Called when runs were created or attempts handed back, to wake workers. */
  onWork?: () => void;
  /** Frozen periods of the project; with each pipeline's own, their intervals get no scheduled run. */
  frozen?: readonly FrozenPeriod[];
  /** "backfills": only advance backfills (a CLI following one backfill); default "all". */
  scope?: "all" | "backfills";
  /** The pipelines as their files say now (reloaded while the scheduler runs); overrides `pipelines`. */
  catalog?: PipelineCatalog;
  /**
   * Told the moment this scheduler takes or loses the lead (before the tick that follows acts),
   * with who leads: logs follow the lease, not the end of a long tick.
   */
  onLeadChange?: (leader: boolean, leaderHolder: string) => void;
  /** How often the leader collects old bundles, and by which rule (`collectBundles` in the config); absent or null: never. */
  bundleCollection?: BundleCollectionSchedule | null;
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
  readonly #o: Required<Omit<SchedulerOptions, "onWork" | "catalog" | "onLeadChange" | "bundleCollection">> & Pick<SchedulerOptions, "onWork" | "catalog" | "onLeadChange" | "bundleCollection">;
  /** When this scheduler, leading, next collects old bundles (null: at its first tick as leader). */
  #nextCollectionAt: number | null = null;
  #leading: boolean | null = null;
  #state: SchedulerStatus["state"] = { kind: "idle" };
  #ticks = 0;
  #lastTickAt: number | null = null;
  readonly #savedVersions = new Set<string>();
  /** The project's frozen periods are recorded once per scheduler, when it was given them. */
  #projectFrozenToRecord: boolean;

  constructor(options: SchedulerOptions) {
    this.#o = { leaseTtlMs: DEFAULTS.schedulerLeaseMs, tickMs: DEFAULTS.schedulerTickMs, random: Math.random, scope: "all", ...options, frozen: options.frozen ?? [], events: options.events ?? new EngineEvents() };
    this.#projectFrozenToRecord = options.frozen !== undefined;
  }

  get #restateEnvironment(): RestateEnvironment {
    return { store: this.#o.store, frozen: this.#o.frozen, events: this.#o.events, saveVersion: (p) => this.#saveVersionOnce(p, this.#o.clock.now()) };
  }

  async #saveVersionOnce(pipeline: Pipeline, now: number): Promise<void> {
    if (this.#savedVersions.has(pipeline.version)) return;
    await saveVersion(this.#o.store, pipeline, now, "scheduler");
    this.#savedVersions.add(pipeline.version);
  }

  #pipelines(): readonly Pipeline[] {
    return this.#o.catalog?.pipelines() ?? this.#o.pipelines;
  }

  /** One round: take or renew the lead; the leader then acts, the others only report who leads. */
  async tick(): Promise<TickResult> {
    const { store, clock, holder, leaseTtlMs, tickMs } = this.#o;
    const now = clock.now();
    const lead = await store.tryLead({ role: "scheduler", holder, now, ttlMs: leaseTtlMs });
    this.#noteLead(lead.leader, lead.holder);
    if (!lead.leader) {
      return { leader: false, leaderHolder: lead.holder, runsCreated: 0, attemptsLost: 0, nextTickAt: now + Math.min(tickMs, leaseTtlMs / 3) };
    }
    const keepingLead = this.#keepLead();
    let result: TickResult;
    let lostTo: string | null = null;
    try {
      result = await this.#act(now);
    } finally {
      lostTo = await keepingLead.stop();
    }
    return lostTo === null ? result : { ...result, leader: false, leaderHolder: lostTo };
  }

  /** What this scheduler is doing now (`Engine.processStatus()`). */
  status(): SchedulerStatus {
    return { part: "scheduler", holder: this.#o.holder, state: this.#state, ticks: this.#ticks, lastTickAt: this.#lastTickAt };
  }

  #noteLead(leader: boolean, leaderHolder: string): void {
    if (leader === this.#leading && this.#state.kind !== "failing" && this.#state.kind !== "starting") return;
    const now = this.#o.clock.now();
    this.#state = leader ? { kind: "leading", since: now } : { kind: "standing-by", leader: leaderHolder, since: now };
    if (leader === this.#leading) return;
    this.#leading = leader;
    const { holder, events } = this.#o;
    if (leader) events.emit("lease:won", { role: "scheduler", holder });
    else events.emit("lease:lost", { role: "scheduler", holder, leader: leaderHolder });
    this.#o.onLeadChange?.(leader, leaderHolder);
  }

  /**
   * Renews the lease on a timer while the leader acts: a tick longer than the lease (a long
   * catch-up, a slow store, a busy machine) must not hand the lead to a
   * standby while this scheduler is alive and working. Renewing is tryLead again, which extends
   * our own lease and takes nothing from a live holder. `stop` waits for a renewal in flight, so
   * none lands after a resignation; it says who leads if this scheduler lost the lead meanwhile.
   */
  #keepLead(): { stop: () => Promise<string | null> } {
    const { store, clock, holder, leaseTtlMs } = this.#o;
    let inFlight: Promise<void> = Promise.resolve();
    let lostTo: string | null = null;
    const timer = setInterval(() => {
      inFlight = inFlight.then(() =>
        store.tryLead({ role: "scheduler", holder, now: clock.now(), ttlMs: leaseTtlMs }).then(
          (lead) => {
            if (!lead.leader) lostTo ??= lead.holder;
            this.#noteLead(lead.leader, lead.holder);
          },
          (error) => this.#o.events.emit("lease:renewal-failed", { role: "scheduler", holder, error: (error as Error).message }),
        ),
      );
    }, Math.max(50, leaseTtlMs / 3));
    timer.unref();
    return {
      stop: async () => {
        clearInterval(timer);
        await inFlight;
        return lostTo;
      },
    };
  }

  /** What the leader does in a tick. */
  async #act(now: number): Promise<TickResult> {
    const { holder, leaseTtlMs, tickMs } = this.#o;
    const attemptsLost = await this.#reapExpiredLeases(now);
    let runsCreated = 0;
    let nextTickAt = now + tickMs;
    if (this.#projectFrozenToRecord) {
      await recordFrozenPeriods(this.#o.store, { pipelineId: null, periods: this.#o.frozen, graphVersion: null, actor: "scheduler", at: now });
      this.#projectFrozenToRecord = false;
    }
    runsCreated += await this.#advanceBackfills(now);
    for (const pipeline of this.#o.scope === "all" ? this.#pipelines() : []) {
      // A new version is recorded as soon as it is loaded, with a change of its frozen periods.
      await this.#saveVersionOnce(pipeline, now);
      runsCreated += await this.#schedule(pipeline, now);
      if (pipeline.restate) runsCreated += await restateTrailingWindow(this.#restateEnvironment, pipeline, now);
      const next = nextDueOf(pipeline.schedule, now);
      if (next) nextTickAt = Math.min(nextTickAt, next.firesAt);
    }
    if (runsCreated + attemptsLost > 0) this.#o.onWork?.();
    await this.#collectBundles(now);
    return { leader: true, leaderHolder: holder, runsCreated, attemptsLost, nextTickAt: Math.min(nextTickAt, now + leaseTtlMs / 3) };
  }

  /**
   * Ticks until `signal` aborts, sleeping on the clock between ticks; `subscribe` lets other
   * processes wake it early (a run ended, so the run cap has room). Resigns the lease at the end.
   */
  async run(signal: AbortSignal, hooks: { subscribe?: (wake: () => void) => Promise<() => void> } = {}): Promise<void> {
    // A wake-up that lands during a tick is kept and acted on right after it: the scheduler hears
    // of a run's end once (not of every finish), so losing that one would cost a whole tick.
    let sleeping: AbortController | null = null;
    let wokenDuringTick = false;
    const unsubscribe = await hooks.subscribe?.(() => {
      if (sleeping) sleeping.abort();
      else wokenDuringTick = true;
    });
    // A store out of reach for a while must not end the scheduler: it tries again shortly, for
    // as long as it runs (a steady pause: a tick is cheap, and the store may be back any moment).
    let failing: Backoff | null = null;
    let dueAt: number | null = null;
    this.#state = { kind: "starting" };
    try {
      while (!signal.aborted) {
        wokenDuringTick = false;
        let result: TickResult;
        try {
          const began = this.#o.clock.now();
          result = await this.tick();
          this.#o.events.emit("scheduler:tick", {
            holder: this.#o.holder, leader: result.leader, durationMs: this.#o.clock.now() - began, lagMs: dueAt === null ? 0 : Math.max(0, began - dueAt),
            runsCreated: result.runsCreated, attemptsLost: result.attemptsLost,
          });
          dueAt = result.nextTickAt;
          failing = null;
          this.#ticks++;
          this.#lastTickAt = began;
        } catch (error) {
          const message = (error as Error).message;
          if (this.#state.kind !== "failing") this.#state = { kind: "failing", since: this.#o.clock.now(), error: message };
          this.#o.events.emit("scheduler:tick-failed", { holder: this.#o.holder, error: message });
          const pauseMs = Math.min(this.#o.tickMs, 2_000);
          failing ??= new Backoff({ firstMs: pauseMs, maxMs: pauseMs, withinMs: Infinity, clock: this.#o.clock, signal });
          await failing.again();
          continue;
        }
        // Wakes from other processes only matter to the leader; a standby waits for the lease.
        if (result.leader && wokenDuringTick) continue;
        const early = new AbortController();
        const onAbort = () => early.abort();
        signal.addEventListener("abort", onAbort, { once: true });
        if (signal.aborted) early.abort(); // stopped during the tick: do not sleep until the next
        sleeping = result.leader ? early : null;
        await this.#o.clock.sleep(Math.max(0, result.nextTickAt - this.#o.clock.now()), early.signal);
        sleeping = null;
        signal.removeEventListener("abort", onAbort);
      }
    } finally {
      this.#state = { kind: "stopped" };
      unsubscribe?.();
      await this.#o.store.resignLead("scheduler", this.#o.holder);
    }
  }

  /**
   * Collects the bundles of each bundled pipeline that nothing needs any more, every `everyMs`:
   * the same collection as `idem versions --collect` (`bundle-collection.ts`), so the store's
   * guarded mark keeps every bundle a queued or running attempt uses. A failure waits for the
   * next collection; it never stops the schedule.
   */
  async #collectBundles(now: number): Promise<void> {
    const schedule = this.#o.bundleCollection;
    if (!schedule || this.#o.scope !== "all" || (this.#nextCollectionAt !== null && now < this.#nextCollectionAt)) return;
    this.#nextCollectionAt = now + schedule.everyMs;
    const { store, clock, events } = this.#o;
    for (const pipeline of this.#pipelines()) {
      if (!codeOf(pipeline)) continue;
      try {
        const done = await collectBundles(store, clock, pipeline.id, {
          actor: "scheduler", reason: `scheduled collection, every ${formatDuration(schedule.everyMs)}`, retention: schedule.retention, auditIfNone: false,
        });
        if (done.collected.length + done.needed.length > 0) events.emit("bundles:collected", { pipelineId: pipeline.id, collected: done.collected, needed: done.needed });
      } catch (error) {
        events.emit("bundles:collect-failed", { pipelineId: pipeline.id, error: (error as Error).message });
      }
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
    const from = scheduleFrom(pipeline, state);
    if (from === undefined) return created;
    // Past its end the pipeline owns no interval: computing the due ones (up to the run cap, every
    // tick, each a few calculations in the zone) would only find them all outside it.
    if (pipeline.end !== null && from >= pipeline.end) return created;
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
        this.#o.events.emit("intervals:skipped", { pipelineId: pipeline.id, count: passed.length, newest: newest.interval.businessDate });
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

  /** Runs (or reruns) the pipeline's own intervals that published datasets fall in; see groupDatasetEvents. */
  async #scheduleFromDatasets(pipeline: Pipeline, now: number): Promise<number> {
    const { store } = this.#o;
    const waits = await store.collectDatasetEvents(pipeline.id, pipeline.triggerOn);
    const groups = groupDatasetEvents({ schedule: pipeline.schedule, start: pipeline.start, end: pipeline.end, triggerOn: pipeline.triggerOn, waits, now });
    const consume = async (dates: readonly string[]) => {
      for (const date of dates) await store.consumeDatasetWaits(pipeline.id, date);
    };
    let created = 0;
    for (const { interval, dates, ready, outside } of groups) {
      if (outside) await consume(dates);
      if (!ready) continue;
      const existing = await store.getRun(runIdFor(pipeline.id, interval));
      const by = `datasets: ${pipeline.triggerOn.join(", ")}`;
      if (!existing) {
        created += await this.#createRun(pipeline, interval, now, "data", by, "upstream datasets published");
      } else if (existing.state === "queued" || existing.state === "running") {
        continue; // keep the events; the run starts again once this one ends
      } else {
        await this.#saveVersionOnce(pipeline, now);
        await store.rerun({ runId: existing.runId, graphVersion: pipeline.version, tasks: taskInstancesOf(pipeline), params: existing.params, at: now, ...latestCode(pipeline) });
        await store.appendAudit({
          at: now, actor: "scheduler", action: "data-rerun", pipelineId: pipeline.id, runId: existing.runId,
          reason: "upstream datasets published again", graphVersion: pipeline.version, details: { businessDate: interval.businessDate, dates },
        });
        created++;
      }
      await consume(dates);
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
    const { created } = await this.#o.store.createRunIfAbsent(
      newRun(pipeline, interval, { trigger, triggeredBy, reason, cursor: trigger === "schedule" ? interval.end : undefined }, now),
    );
    if (created) this.#o.events.emit("run:created", { pipelineId: pipeline.id, runId: runIdFor(pipeline.id, interval), businessDate: interval.businessDate, trigger });
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
      const pipeline = this.#pipelines().find((p) => p.id === backfill.pipelineId);
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
        this.#o.events.emit("backfill:ended", { backfillId: backfill.backfillId, pipelineId: backfill.pipelineId, state, succeeded: progress.succeeded, failed: progress.failed });
      }
    }
    return started;
  }

  async #startBackfillItem(pipeline: Pipeline, backfill: BackfillRecord, item: BackfillItem, now: number): Promise<number> {
    const { store } = this.#o;
    const selected = backfill.taskIds ? new Set(backfill.taskIds) : null;
    const existing = await store.getRun(item.runId);
    if (existing && (existing.state === "queued" || existing.state === "running")) {
      this.#o.events.emit("backfill:run-left", { backfillId: backfill.backfillId, pipelineId: pipeline.id, runId: item.runId, state: existing.state });
      return 0;
    }
    await this.#saveVersionOnce(pipeline, now);
    if (!existing) {
      await store.createRunIfAbsent(newRun(
        pipeline,
        { runId: item.runId, start: item.intervalStart, end: item.intervalEnd, businessDate: item.businessDate },
        { trigger: "backfill", triggeredBy: backfill.actor, reason: backfill.reason, backfillId: backfill.backfillId, only: selected },
        now,
      ));
    } else {
      // The code the backfill chose: the run's own, or the pipeline's as loaded (with its graph).
      let code;
      try {
        code = await rerunCode(existing, pipeline, backfill.codeChoice);
      } catch (error) {
        this.#o.events.emit("backfill:code-missing", { backfillId: backfill.backfillId, pipelineId: pipeline.id, runId: item.runId, reason: (error as Error).message });
        return 0;
      }
      await store.rerun({
        runId: existing.runId,
        graphVersion: code.pipeline.version,
        tasks: taskInstancesOf(code.pipeline),
        taskIds: selected ? [...selected] : undefined,
        params: existing.params,
        at: now,
        backfill: { backfillId: backfill.backfillId, triggeredBy: backfill.actor, reason: backfill.reason },
        ...(code.move ?? {}),
      });
    }
    this.#o.events.emit("backfill:run-started", { backfillId: backfill.backfillId, pipelineId: pipeline.id, runId: item.runId, businessDate: item.businessDate, action: item.action });
    return 1;
  }

  /** A worker that stopped renewing its lease is presumed dead: its attempts are lost and retried. */
  async #reapExpiredLeases(now: number): Promise<number> {
    const { store } = this.#o;
    let lost = 0;
    for (const expired of await store.listExpiredAttempts(now, 500)) {
      const task = this.#pipelines().find((p) => p.id === expired.pipelineId)?.tasks.get(expired.taskId);
      const retryAt = now + (task ? retryDelay(task.policy, expired.tryNumber + 1, this.#o.random) : 0);
      const outcome = await store.loseAttempt({ attemptId: expired.attemptId, now, retryAt });
      if (outcome.accepted) {
        lost++;
        this.#o.events.emit("attempt:lost", {
          pipelineId: expired.pipelineId, runId: expired.runId, taskId: expired.taskId, tryNumber: expired.tryNumber,
          workerId: expired.workerId, taskState: outcome.taskState,
        });
        if (outcome.runState === "success" || outcome.runState === "failed") {
          this.#o.events.emit("run:ended", { pipelineId: expired.pipelineId, runId: expired.runId, state: outcome.runState, by: "lost-attempt" });
        }
      }
    }
    return lost;
  }
}

/**
 * Where the schedule goes on from: its cursor (the end of the last interval accounted for), else
 * the pipeline's start, else the first interval due after the store first saw it.
 */
export function scheduleFrom(pipeline: Pipeline, state: PipelineState): number | undefined {
  return state.scheduleCursor ?? pipeline.start ?? pipeline.schedule.nextDue(state.createdAt)?.interval.start;
}
