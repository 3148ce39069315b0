import { Temporal } from "temporal-polyfill";
import type { Interval } from "../time/interval.ts";

/**
 * A run's id is derived from its pipeline and interval, so the same interval always names the
 * same run: `shop_orders@2026-09-01` for a whole local day, UTC bounds otherwise.
 */
export function runIdFor(pipelineId: string, interval: Interval): string {
  return `${pipelineId}@${intervalLabel(interval)}`;
}

export function intervalLabel(interval: Interval): string {
  if (isWholeLocalDay(interval)) return interval.businessDate;
  const iso = (ms: number) => new Date(ms).toISOString().replace(/:00\.000Z$/, "Z").replace(/\.000Z$/, "Z");
  return `${iso(interval.start)}--${iso(interval.end)}`;
}

function isWholeLocalDay(interval: Interval): boolean {
  const date = Temporal.PlainDate.from(interval.businessDate);
  const start = date.toZonedDateTime(interval.timezone).epochMilliseconds;
  const end = date.add({ days: 1 }).toZonedDateTime(interval.timezone).epochMilliseconds;
  return start === interval.start && end === interval.end;
}
