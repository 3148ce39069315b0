import type { Pipeline } from "../../core/pipeline/types.ts";
import type { FreshnessPromise } from "../../core/pipeline/promise.ts";
import { instantFor } from "../../core/pipeline/promise.ts";
import { addDays, localDate } from "../../core/time/dates.ts";
import type { FreshnessRecord, Incident, FreshnessStore, WorkerStore } from "../../store/port.ts";
import { incidentState, type IncidentState } from "../../core/policy/incident-lifecycle.ts";
import { healthVerdict } from "../../core/policy/installation-health.ts";
import { SCHEDULER_ROLE, schedulerPresence } from "../scheduler/presence.ts";
import { CHECKER_ROLE } from "./watchdog.ts";

export type DayStatus = "on_time" | "late" | "missed" | "not_yet_due";

export interface CheckerHealth {
  /** The checker (the watchdog holding the checker lease): passing, stale, or never run. */
  status: "ok" | "stale" | "none";
  /** Who runs the checker: "worker host:pid:random", "scheduler ...", "serve ...". */
  holder: string | null;
  /** How long ago its last pass started. */
  lastPassAgeMs: number | null;
  scheduler: { live: boolean; holder: string | null; heartbeatAgeMs: number | null; note: string };
  /** The checker passes and a scheduler leads (core's `healthVerdict`, with no file left out). */
  healthy: boolean;
  message: string;
}

export interface DatasetFreshness {
  dataset: string;
  pipelineId: string;
  owner: string | null;
  timezone: string;
  deadline: string;
  slo: string | null;
  newest: FreshnessRecord | null;
  /** The newest date that should be published by now, and its status. */
  due: { businessDate: string; status: DayStatus; deadlineAt: number } | null;
  days: DayFreshness[];
}

export interface DayFreshness {
  businessDate: string;
  status: DayStatus;
  publishedAt: number | null;
  deadlineAt: number;
  emptyReason: string | null;
}

/** An incident as surfaces show it: with its state now (a lapsed snooze is open again). */
export type IncidentView = Incident & { state: IncidentState };

export interface FreshnessReport {
  checker: CheckerHealth;
  datasets: DatasetFreshness[];
  /** Unresolved incidents: open, or acknowledged (by whom, until when). */
  openIncidents: IncidentView[];
}

/**
 * Is anyone watching? The checker's silence must be loud (a dead checker sends no alerts), and
 * so must a dead scheduler's (nothing is created). Shown by `idem health`, `idem freshness` and `/health`.
 */
export async function checkerHealth(store: FreshnessStore & WorkerStore, now: number, staleMs: number): Promise<CheckerHealth> {
  const lease = await store.getLead(CHECKER_ROLE);
  const presence = await schedulerPresence(store, now);
  const lead = await store.getLead(SCHEDULER_ROLE);
  const scheduler = {
    live: presence.live,
    holder: lead?.holder ?? null,
    heartbeatAgeMs: lead ? now - lead.renewedAt : null,
    note: presence.live ? `scheduler ${presence.holder} leads (heartbeat ${seconds(now - lead!.renewedAt)} ago)` : presence.note,
  };
  const base = { scheduler, holder: lease?.holder ?? null, lastPassAgeMs: lease ? now - lease.renewedAt : null };
  const age = lease ? now - lease.renewedAt : null;
  const [status, message]: [CheckerHealth["status"], string] =
    !lease || age === null ? ["none", `no watchdog has ever run: nothing checks the promises (every scheduler, worker and web server runs it); ${scheduler.note}`]
      : age > staleMs ? ["stale", `the checker's last pass was ${seconds(age)} ago (${lease.holder}): nothing checks the promises or sends alerts; ${scheduler.note}`]
        : ["ok", `checker run by ${lease.holder}, last pass ${seconds(age)} ago; ${scheduler.note}`];
  const { healthy } = healthVerdict({ reachable: true, checker: { status, message }, schedulerLive: scheduler.live, brokenFiles: 0 });
  return { ...base, status, healthy, message };
}

function seconds(ms: number): string {
  return `${Math.round(ms / 1000)}s`;
}

export async function freshnessReport(store: FreshnessStore & WorkerStore, pipelines: readonly Pipeline[], now: number, staleMs: number, days = 7): Promise<FreshnessReport> {
  const datasets: DatasetFreshness[] = [];
  for (const pipeline of pipelines) {
    for (const promise of pipeline.promises) {
      const { rows, all } = await promiseDays(store, pipeline, promise, now, days);
      const today = localDate(now, promise.timezone);
      const dueDays = all.filter((d) => d.status !== "not_yet_due");
      const newestRows = rows.size ? [...rows.values()] : await store.listFreshness(promise.dataset, "0000-01-01", today);
      datasets.push({
        dataset: promise.dataset,
        pipelineId: pipeline.id,
        owner: promise.owner,
        timezone: promise.timezone,
        deadline: `D+${promise.deadline.days} ${promise.deadline.time}`,
        slo: promise.slo ? `D+${promise.slo.days} ${promise.slo.time}` : null,
        newest: newestRows.at(-1) ?? null,
        due: dueDays.length ? { businessDate: dueDays.at(-1)!.businessDate, status: dueDays.at(-1)!.status, deadlineAt: dueDays.at(-1)!.deadlineAt } : null,
        days: all.slice(-days),
      });
    }
  }
  return { checker: await checkerHealth(store, now, staleMs), datasets, openIncidents: (await store.listIncidents({ open: true })).map((i) => ({ ...i, state: incidentState(i, now) })) };
}

/**
 * A promise's business dates from `days` (and its deadline's days) before today to today, each
 * with its status, and the publications read for them: one index range of the freshness table.
 */
export async function promiseDays(store: FreshnessStore, pipeline: Pipeline, promise: FreshnessPromise, now: number, days: number): Promise<{ rows: Map<string, FreshnessRecord>; all: DayFreshness[] }> {
  const today = localDate(now, promise.timezone);
  const from = addDays(today, -(days + promise.deadline.days));
  const rows = new Map((await store.listFreshness(promise.dataset, from, today)).map((r) => [r.businessDate, r]));
  const all: DayFreshness[] = [];
  const firstDate = firstBusinessDate(pipeline);
  for (let date = from; date <= today; date = addDays(date, 1)) {
    if (firstDate !== null && firstDate > date) continue;
    const deadlineAt = instantFor(promise.deadline, date, promise.timezone);
    const sloAt = promise.slo ? instantFor(promise.slo, date, promise.timezone) : deadlineAt;
    const row = rows.get(date) ?? null;
    // on time or not is the first publication's; a republication (rerun, restatement) does not make a day late
    all.push({ businessDate: date, status: dayStatus(row?.firstPublishedAt ?? null, sloAt, deadlineAt, now), publishedAt: row?.publishedAt ?? null, deadlineAt, emptyReason: row?.emptyReason ?? null });
  }
  return { rows, all };
}

/** A pipeline's first business date, once per pipeline object: each costs zone arithmetic. */
const firstDates = new WeakMap<Pipeline, string | null>();
function firstBusinessDate(pipeline: Pipeline): string | null {
  if (!firstDates.has(pipeline)) firstDates.set(pipeline, pipeline.start === null ? null : pipeline.schedule.intervalAt(pipeline.start).businessDate);
  return firstDates.get(pipeline)!;
}

function dayStatus(publishedAt: number | null, sloAt: number, deadlineAt: number, now: number): DayStatus {
  if (publishedAt !== null) return publishedAt <= sloAt ? "on_time" : publishedAt <= deadlineAt ? "late" : "missed";
  if (now < sloAt) return "not_yet_due";
  return now < deadlineAt ? "late" : "missed";
}
