import type { Due, Timetable } from "../../core/time/timetable.ts";

/** Per schedule: the last answer of `nextDue`, and the instant it was asked for. */
const answers = new WeakMap<Timetable, { askedAt: number; due: Due | null }>();

/**
 * `schedule.nextDue(now)`, computed again only once the answer has fired. The scheduler asks it of
 * every pipeline on every tick, and it costs a few calculations in the zone each time (1-3 ms on a
 * busy machine), while the answer holds from the instant it was computed until its interval fires:
 * no interval fires in between, by its definition. A clock that goes back asks again.
 */
export function nextDueOf(schedule: Timetable, now: number): Due | null {
  const known = answers.get(schedule);
  if (known && known.askedAt <= now && (known.due === null || now < known.due.firesAt)) return known.due;
  const due = schedule.nextDue(now);
  answers.set(schedule, { askedAt: now, due });
  return due;
}
