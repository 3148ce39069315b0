import { EngineEvents } from "../events/engine-events.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import { instantFor, type FreshnessPromise } from "../../core/pipeline/promise.ts";
import { addDays, formatInstant, localDate, startOfDay } from "../../core/time/dates.ts";
import type { FreshnessStore, NewIncident, RunStore, SchedulingStore, WorkerStore } from "../../store/port.ts";
import type { SchedulerPresence } from "../../core/policy/expected-run.ts";
import { intervalLabel } from "../../core/model/run-id.ts";
import { expectedRuns, recentIntervalsFrom } from "../scheduler/ledger.ts";
import { LeadMemory, schedulerPresence } from "../scheduler/presence.ts";
import { routeIncident, type AlertRoute } from "../../core/policy/alert-routing.ts";
import { incidentTraits } from "./incident-traits.ts";
import { reopenDue } from "../../core/policy/incident-lifecycle.ts";
import { DEFAULTS } from "../project/defaults.ts";

/** What the checker reads and writes: freshness and incidents, runs, the ledger, and who leads. */
export type CheckerStore = FreshnessStore & RunStore & SchedulingStore & WorkerStore;

export interface CheckerOptions {
  store: CheckerStore;
  /** The pipelines to check, or where to read them at each pass (they are reloaded while idem runs). */
  pipelines: readonly Pipeline[] | (() => readonly Pipeline[]);
  /** How many business dates back the checker looks. Default 7. */
  lookbackDays?: number;
  /**
   * A due interval with no run this long after it fired, and no scheduler progressing toward it,
   * did not run; a scheduler that has not held the lead for this long is down. Default 10 minutes.
   */
  didNotRunGraceMs?: number;
  /** Who hears of incidents that neither a promise nor a route names notifiers for. */
  defaultNotify?: readonly string[];
  /** Rules choosing notifiers by pipeline, dataset, owner, severity and kind (`alerts.routes`). */
  routes?: readonly AlertRoute[];
  /**
   * True while this process's own scheduler has not yet tried to take the lead: the lead its
   * predecessor left (an hour ago, yesterday) says nothing about the one starting now.
   */
  schedulerStarting?: () => boolean;
  /** Where incidents opened, resolved and snoozes ended are told. */
  events?: EngineEvents;
}

/** A schedule that fires every few seconds is checked over its newest intervals only. */
const MAX_CHECKED_INTERVALS = 500;

export interface CheckResult {
  opened: string[];
  /** Incidents whose snooze ended with them unresolved: told again, once per snooze. */
  reopened: string[];
  resolved: string[];
}

/**
 * Measures promises against what was published, and opens (or resolves) incidents: late at the
 * SLO, SLA missed at the deadline, published late, did not run, run failed for good. It reads
 * the state store only, never the data. Incidents are keyed, so each alerts once.
 */
export class FreshnessChecker {
  readonly #o: Required<Omit<CheckerOptions, "schedulerStarting">> & Pick<CheckerOptions, "schedulerStarting">;
  readonly #lead = new LeadMemory();
  /** When this checker first looked: "no scheduler ever" counts its grace from here. */
  #firstCheckAt: number | null = null;
  /** The pipelines of the pass under way. */
  #pipelines: readonly Pipeline[] = [];
  /** Since when each promise exists, once known (a recorded graph version never moves). */
  readonly #promiseSince = new Map<string, number>();

  constructor(options: CheckerOptions) {
    this.#o = { lookbackDays: 7, didNotRunGraceMs: DEFAULTS.didNotRunGraceMs, defaultNotify: [], routes: [], ...options, events: options.events ?? new EngineEvents() };
  }

  async check(now: number): Promise<CheckResult> {
    const result: CheckResult = { opened: [], reopened: [], resolved: [] };
    this.#firstCheckAt ??= now;
    const { pipelines } = this.#o;
    this.#pipelines = typeof pipelines === "function" ? pipelines() : pipelines;
    const scheduler = await schedulerPresence(this.#o.store, now, this.#lead);
    await this.#checkScheduler(scheduler, now, result);
    for (const pipeline of this.#pipelines) {
      for (const promise of pipeline.promises) await this.#checkPromise(pipeline, promise, now, result);
      await this.#checkDidNotRun(pipeline, scheduler, now, result);
    }
    await this.#checkFailedRuns(now, result);
    await this.#tellLapsedSnoozes(now, result);
    return result;
  }

  /**
   * An incident snoozed until a time that has come is open again; without an alert its page
   * would come back unseen. The store tells each snooze's end once (core's reopenDue, decided
   * again in its transaction), to the notifiers told of the opening.
   */
  async #tellLapsedSnoozes(now: number, result: CheckResult): Promise<void> {
    for (const open of await this.#o.store.listIncidents({ open: true, limit: 1000 })) {
      if (!reopenDue(open, now) || !(await this.#o.store.reopenIncident(open.key, now))) continue;
      result.reopened.push(open.key);
      this.#o.events.emit("incident:snooze-ended", { key: open.key, message: open.message });
    }
  }

  async #checkPromise(pipeline: Pipeline, promise: FreshnessPromise, now: number, result: CheckResult): Promise<void> {
    const { store } = this.#o;
    const today = localDate(now, promise.timezone);
    const first = this.#firstDate(pipeline, addDays(today, -(this.#o.lookbackDays + promise.deadline.days)));
    const published = new Map((await store.listFreshness(promise.dataset, first, today)).map((f) => [f.businessDate, f]));
    const since = await this.#sinceOf(pipeline, promise, now);
    const when = (ms: number) => formatInstant(ms, promise.timezone);
    /** Unpublished dates whose deadline passed before the promise existed: one summary, no page each. */
    const beforePromise: string[] = [];
    for (let date = first; date <= today; date = addDays(date, 1)) {
      if (pipeline.end !== null && this.#dateStart(pipeline, date) >= pipeline.end) break;
      const deadlineAt = instantFor(promise.deadline, date, promise.timezone);
      const sloAt = promise.slo ? instantFor(promise.slo, date, promise.timezone) : deadlineAt;
      const promised = deadlineAt >= since;
      const row = published.get(date);
      const keys = { slo: `late:${promise.dataset}:${date}`, sla: `sla_missed:${promise.dataset}:${date}` };
      const incident = { dataset: promise.dataset, pipelineId: pipeline.id, businessDate: date, notify: promise.notify, at: now };
      if (row) {
        // Lateness is the first publication's: a rerun or restatement republishing a day that
        // was on time makes it fresher, not late.
        const how = `published at ${when(row.firstPublishedAt)}${row.emptyReason ? ` (declared empty: ${row.emptyReason})` : ""}`;
        await this.#resolve(result, keys.slo, now, how);
        const slaResolved = await this.#resolve(result, keys.sla, now, how);
        if (row.firstPublishedAt > deadlineAt && promised) {
          // A fact, not a condition: recorded closed by the publication that ends it, and
          // alerted once (by the SLA missed incident's resolution when that one had paged).
          await this.#open(result, {
            ...incident, key: `late_publication:${promise.dataset}:${date}`, kind: "late_publication", runId: row.runId,
            closed: `closed by its publication at ${when(row.firstPublishedAt)}`,
            message: `${promise.dataset} for ${date} was ${how}, after its deadline ${when(deadlineAt)}`,
          }, { alert: !slaResolved });
        }
      } else if (!promised) {
        if (now >= deadlineAt) beforePromise.push(date);
      } else if (now >= deadlineAt) {
        await this.#open(result, {
          ...incident, key: keys.sla, kind: "sla_missed", runId: null,
          message: `SLA missed: ${promise.dataset} for ${date} is not published; the deadline was ${when(deadlineAt)}${promise.owner ? ` (owner ${promise.owner})` : ""}`,
        });
      } else if (now >= sloAt && sloAt >= since) {
        await this.#open(result, {
          ...incident, key: keys.slo, kind: "late", runId: null,
          message: `late: ${promise.dataset} for ${date} is not published at its SLO ${when(sloAt)}; the deadline is ${when(deadlineAt)}`,
        });
      }
    }
    await this.#summariseBeforePromise(pipeline, promise, since, beforePromise, now, result);
  }

  /**
   * One incident for a promise's business dates whose deadline passed before it existed (a
   * first catch-up of 30 days would otherwise page 30 times before a task ran); it resolves when
   * none of them is unpublished any more.
   */
  async #summariseBeforePromise(pipeline: Pipeline, promise: FreshnessPromise, since: number, dates: readonly string[], now: number, result: CheckResult): Promise<void> {
    const key = `before_promise:${pipeline.id}:${promise.dataset}`;
    if (dates.length === 0) {
      await this.#resolve(result, key, now, `no business date due before the promise is unpublished any more`);
      return;
    }
    const range = dates.length === 1 ? dates[0] : `${dates[0]} to ${dates.at(-1)}`;
    await this.#open(result, {
      key, kind: "before_promise", dataset: promise.dataset, pipelineId: pipeline.id, businessDate: null, runId: null, notify: promise.notify, at: now,
      message: `${promise.dataset}: ${dates.length} business date${dates.length === 1 ? "" : "s"} (${range}) had their deadline before the promise existed (${formatInstant(since, promise.timezone)}) and ${dates.length === 1 ? "is" : "are"} not published; a catch-up publishes them without an alert each`,
    });
  }

  /**
   * Since when the promise exists: its pipeline's first recorded graph version that has it. A
   * promise no version has yet is new: it exists since this checker first looked.
   */
  async #sinceOf(pipeline: Pipeline, promise: FreshnessPromise, now: number): Promise<number> {
    const key = `${pipeline.id}\u0000${promise.dataset}`;
    const known = this.#promiseSince.get(key);
    if (known !== undefined) return known;
    const seen = await this.#o.store.promiseFirstSeen(pipeline.id, promise.dataset);
    if (seen === null) return this.#firstCheckAt ?? now;
    this.#promiseSince.set(key, seen);
    return seen;
  }

  /**
   * No scheduler leads: nothing creates scheduled runs, starts backfills or reaps lost attempts.
   * One incident for the outage (keyed by when the lead was last held), resolved when one leads again.
   */
  async #checkScheduler(scheduler: SchedulerPresence, now: number, result: CheckResult): Promise<void> {
    const needed = this.#pipelines.some((p) => p.schedule.kind !== "manual" || p.triggerOn.length > 0);
    if (scheduler.live) {
      for (const open of await this.#o.store.listIncidents({ open: true, limit: 1000 })) {
        if (open.kind === "scheduler_down") await this.#resolve(result, open.key, now, `scheduler ${scheduler.holder} leads again`);
      }
      return;
    }
    if (this.#o.schedulerStarting?.()) return;
    const downSince = scheduler.lastLeadAt ?? this.#firstCheckAt!;
    if (!needed || now < downSince + this.#o.didNotRunGraceMs) return;
    await this.#open(result, {
      key: `scheduler_down:${scheduler.lastLeadAt ?? scheduler.holder ?? "never"}`, kind: "scheduler_down", dataset: null, pipelineId: null,
      businessDate: null, runId: null, notify: [], at: now,
      message: `scheduler down: ${scheduler.note}; no scheduled run is created and no backfill advances`,
    });
  }

  /** A due interval that nothing will create by itself: paused, passed over, or a scheduler that stalled. */
  async #checkDidNotRun(pipeline: Pipeline, scheduler: SchedulerPresence, now: number, result: CheckResult): Promise<void> {
    if (pipeline.schedule.kind === "manual") return;
    const from = recentIntervalsFrom(pipeline, pipeline.schedule.nextDue(now)?.interval.start ?? now, now - (this.#o.lookbackDays + 1) * 86_400_000, MAX_CHECKED_INTERVALS);
    const ledger = await expectedRuns(this.#o.store, pipeline, { from, to: now }, now, { graceMs: this.#o.didNotRunGraceMs, scheduler });
    for (const entry of ledger) {
      const key = `did_not_run:${pipeline.id}:${intervalLabel(entry.interval)}`;
      if (entry.didNotRun) {
        await this.#open(result, {
          key, kind: "did_not_run", dataset: null, pipelineId: pipeline.id, businessDate: entry.interval.businessDate, runId: null,
          notify: this.#notifyFor(pipeline), at: now,
          message: `did not run: ${pipeline.id} has no run for ${entry.interval.businessDate}, due at ${formatInstant(entry.firesAt, pipeline.schedule.timezone)}; likely cause: ${entry.note}`,
        });
      } else if (entry.runId !== null || entry.status === "skipped") {
        await this.#resolve(result, key, now, entry.status === "skipped" ? `skipped: ${entry.note}` : `run ${entry.runId} exists (${entry.status})`);
      }
    }
  }

  /** One alert when a run has failed for good (after its last try), never one per retry. */
  async #checkFailedRuns(now: number, result: CheckResult): Promise<void> {
    const { store } = this.#o;
    const since = now - (this.#o.lookbackDays + 1) * 86_400_000;
    for (const run of await store.failedRunsSince(since)) {
      const pipeline = this.#pipelines.find((p) => p.id === run.pipelineId);
      const failed = (await store.listTaskInstances(run.runId)).filter((t) => t.state === "failed");
      const detail = await Promise.all(
        failed.map(async (t) => {
          const last = (await store.listAttempts(run.runId, t.taskId)).at(-1);
          return `${t.taskId} after ${t.tryNumber} tr${t.tryNumber === 1 ? "y" : "ies"}${last?.errorMessage ? `: ${last.errorMessage}` : ""}`;
        }),
      );
      const restatement = run.trigger === "restate";
      await this.#open(result, {
        key: `${restatement ? "restate_failed" : "run_failed"}:${run.runId}:${run.endedAt}`, kind: restatement ? "restate_failed" : "run_failed",
        dataset: null, pipelineId: run.pipelineId, businessDate: run.businessDate, runId: run.runId,
        notify: pipeline ? this.#notifyFor(pipeline) : [], at: now,
        message: restatement
          ? `restatement ${run.restateCount} of ${run.runId} failed${detail.length ? `: ${detail.join("; ")}` : ""}; ${await this.#standing(pipeline, run.businessDate)}`
          : `run ${run.runId} failed${detail.length ? `: ${detail.join("; ")}` : ""}`,
      });
    }
    for (const open of await store.listIncidents({ open: true, limit: 1000 })) {
      if ((open.kind !== "run_failed" && open.kind !== "restate_failed") || !open.runId) continue;
      const run = await store.getRun(open.runId);
      if (run && run.state === "success") await this.#resolve(result, open.key, now, `run ${run.runId} succeeded on a later try`);
    }
  }

  /** What a failed restatement left in place: the publications it did not replace. */
  async #standing(pipeline: Pipeline | undefined, businessDate: string): Promise<string> {
    const stands: string[] = [];
    for (const promise of pipeline?.promises ?? []) {
      const [row] = await this.#o.store.listFreshness(promise.dataset, businessDate, businessDate);
      if (row) stands.push(`${promise.dataset} for ${businessDate} published at ${formatInstant(row.publishedAt, promise.timezone)}`);
    }
    return stands.length ? `the previous publication stands (${stands.join("; ")})` : "the data it would have replaced stands";
  }

  /** The notifiers a pipeline's promises name: told of its runs that fail or do not happen. */
  #notifyFor(pipeline: Pipeline): readonly string[] {
    return [...new Set(pipeline.promises.flatMap((p) => p.notify))];
  }

  #firstDate(pipeline: Pipeline, candidate: string): string {
    if (pipeline.start === null) return candidate;
    const start = localDate(pipeline.start, pipeline.schedule.timezone);
    return start > candidate ? start : candidate;
  }

  #dateStart(pipeline: Pipeline, date: string): number {
    return startOfDay(date, pipeline.schedule.timezone);
  }

  /**
   * Opens an incident told to the notifiers it names (`notify`: its promise's), those of the
   * routes that match it, else `defaultNotify`; to none when `alert` is false (a fact another
   * incident already told).
   */
  async #open(result: CheckResult, named: NewIncident, { alert = true }: { alert?: boolean } = {}): Promise<void> {
    const traits = incidentTraits(named, this.#pipelines);
    const notify = alert
      ? routeIncident({ kind: named.kind, pipelineId: named.pipelineId, dataset: named.dataset, ...traits }, { named: named.notify, routes: this.#o.routes, fallback: this.#o.defaultNotify })
      : [];
    const incident = { ...named, notify };
    if (await this.#o.store.openIncident(incident)) {
      result.opened.push(incident.key);
      this.#o.events.emit("incident:opened", { key: incident.key, pipelineId: incident.pipelineId, message: incident.message });
    }
  }

  /** True if the incident was unresolved (idem resolved it now). */
  async #resolve(result: CheckResult, key: string, now: number, resolution: string): Promise<boolean> {
    if (!(await this.#o.store.resolveIncident(key, now, resolution))) return false;
    result.resolved.push(key);
    this.#o.events.emit("incident:resolved", { key, resolution });
    return true;
  }
}
