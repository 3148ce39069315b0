import type { Timetable } from "../time/base.ts";
import { startOfDay } from "../time/dates.ts";
import type { Interval } from "../time/interval.ts";

/** The dataset events waiting for one interval of a data-triggered pipeline. */
export interface DataTriggerGroup {
  interval: Interval;
  /** The business dates (of the producers) whose events fall in this interval, oldest first. */
  dates: string[];
  /** Every dataset waited on has an event inside the interval, and the interval is due: run (or rerun) it now. */
  ready: boolean;
  /** Before the pipeline's start or at/after its end: nobody will run it, the events are dropped. */
  outside: boolean;
}

/**
 * Maps the business dates that have unconsumed dataset events onto the consumer's own intervals:
 * an event for D belongs to the interval containing D (a Tuesday to its week, a day to its
 * month), so several events for one interval collapse into one run, and a day republished after
 * the run reruns the interval. An interval is ready once it is due by its schedule (its end for
 * a manual one), so a weekly rollup runs once for the whole week, not once per day published.
 */
export function groupDatasetEvents(input: {
  schedule: Timetable;
  start: number | null;
  end: number | null;
  triggerOn: readonly string[];
  waits: ReadonlyMap<string, ReadonlySet<string>>;
  now: number;
}): DataTriggerGroup[] {
  const { schedule } = input;
  const groups = new Map<number, { interval: Interval; dates: string[]; datasets: Set<string> }>();
  for (const [date, datasets] of input.waits) {
    const interval = schedule.intervalAt(startOfDay(date, schedule.timezone));
    let group = groups.get(interval.start);
    if (!group) groups.set(interval.start, (group = { interval, dates: [], datasets: new Set() }));
    group.dates.push(date);
    for (const d of datasets) group.datasets.add(d);
  }
  return [...groups.values()]
    .sort((a, b) => a.interval.start - b.interval.start)
    .map(({ interval, dates, datasets }) => {
      const outside = (input.start !== null && interval.start < input.start) || (input.end !== null && interval.start >= input.end);
      const dueAt = schedule.kind === "manual" ? interval.end : schedule.firesAt(interval);
      const ready = !outside && dueAt <= input.now && input.triggerOn.every((d) => datasets.has(d));
      return { interval, dates: dates.sort(), ready, outside };
    });
}
