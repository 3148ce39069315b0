import type { Pipeline } from "../../core/pipeline/types.ts";
import { instantFor } from "../../core/pipeline/promise.ts";
import { addDays, localDate } from "../../core/time/dates.ts";
import type { FreshnessRecord, Incident, Store } from "../../store/port.ts";

export type DayStatus = "on_time" | "late" | "missed" | "not_yet_due";

export interface CheckerHealth {
  status: "ok" | "stale" | "none";
  holder: string | null;
  heartbeatAgeMs: number | null;
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
  days: { businessDate: string; status: DayStatus; publishedAt: number | null; deadlineAt: number; emptyReason: string | null }[];
}

export interface FreshnessReport {
  checker: CheckerHealth;
  datasets: DatasetFreshness[];
  openIncidents: Incident[];
}

/** Is the checker alive? A dead scheduler sends no alerts, so its silence must be loud. */
export async function checkerHealth(store: Store, now: number, staleMs: number): Promise<CheckerHealth> {
  const lead = await store.getLead("scheduler");
  if (!lead) return { status: "none", holder: null, heartbeatAgeMs: null, message: "no scheduler has ever run: nothing checks the promises" };
  const age = now - lead.renewedAt;
  if (age > staleMs || lead.expiresAt < now) {
    return { status: "stale", holder: lead.holder, heartbeatAgeMs: age, message: `the scheduler's heartbeat is ${Math.round(age / 1000)}s old: the checker is down and sends no alerts` };
  }
  return { status: "ok", holder: lead.holder, heartbeatAgeMs: age, message: `checker alive (scheduler ${lead.holder}, heartbeat ${Math.round(age / 1000)}s ago)` };
}

export async function freshnessReport(store: Store, pipelines: readonly Pipeline[], now: number, staleMs: number, days = 7): Promise<FreshnessReport> {
  const datasets: DatasetFreshness[] = [];
  for (const pipeline of pipelines) {
    for (const promise of pipeline.promises) {
      const today = localDate(now, promise.timezone);
      const from = addDays(today, -(days + promise.deadline.days));
      const rows = new Map((await store.listFreshness(promise.dataset, from, today)).map((r) => [r.businessDate, r]));
      const all = [];
      for (let date = from; date <= today; date = addDays(date, 1)) {
        if (pipeline.start !== null && pipeline.schedule.intervalAt(pipeline.start).businessDate > date) continue;
        const deadlineAt = instantFor(promise.deadline, date, promise.timezone);
        const sloAt = promise.slo ? instantFor(promise.slo, date, promise.timezone) : deadlineAt;
        const row = rows.get(date) ?? null;
        // on time or not is the first publication's; a republication (rerun, restatement) does not make a day late
        all.push({ businessDate: date, status: dayStatus(row?.firstPublishedAt ?? null, sloAt, deadlineAt, now), publishedAt: row?.publishedAt ?? null, deadlineAt, emptyReason: row?.emptyReason ?? null });
      }
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
  return { checker: await checkerHealth(store, now, staleMs), datasets, openIncidents: await store.listIncidents({ open: true }) };
}

function dayStatus(publishedAt: number | null, sloAt: number, deadlineAt: number, now: number): DayStatus {
  if (publishedAt !== null) return publishedAt <= sloAt ? "on_time" : publishedAt <= deadlineAt ? "late" : "missed";
  if (now < sloAt) return "not_yet_due";
  return now < deadlineAt ? "late" : "missed";
}
