import type { Due, Timetable } from "../../core/time/timetable.ts";

/** Past this many intervals a schedule's cache starts again (a year of hourly runs is 8,760). */
const MAX_CACHED = 20_000;

/** Per schedule: each interval and its fire time by start, and by any instant a window was asked from. */
const caches = new WeakMap<Timetable, Map<number, Due>>();

/**
 * `schedule.intervalsBetween(from, to)` with each interval's fire time, computed once per schedule
 * and interval: a year's grid or ledger asks for 366 of each, and each is a few Temporal
 * calculations in the zone, which cost more than the page's queries. A schedule is immutable
 * (a changed pipeline file builds a new one), so what is kept never goes stale. The entries are
 * frozen: they are shared by every caller.
 */
export function duesBetween(schedule: Timetable, from: number, to: number): readonly Due[] {
  let cache = caches.get(schedule);
  if (!cache) caches.set(schedule, (cache = new Map()));
  const out: Due[] = [];
  let at = from;
  while (at < to) {
    const due = cache.get(at);
    if (!due) return [...out, ...fill(schedule, cache, at, to)];
    if (due.interval.start >= to) break;
    out.push(due);
    at = due.interval.end;
  }
  return out;
}

function fill(schedule: Timetable, cache: Map<number, Due>, from: number, to: number): Due[] {
  if (cache.size > MAX_CACHED) cache.clear();
  const dues = schedule.intervalsBetween(from, to).map((interval) => Object.freeze({ interval: Object.freeze(interval), firesAt: schedule.firesAt(interval) }));
  for (const due of dues) cache.set(due.interval.start, due);
  // A window may start between boundaries: remember where its first interval is.
  if (dues[0] && dues[0].interval.start !== from) cache.set(from, dues[0]);
  return dues;
}
