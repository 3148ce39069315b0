import type { RunState, TaskState } from "../model/states.ts";
import type { Interval } from "../time/interval.ts";
import type { Timetable } from "../time/timetable.ts";
import { describeFrozen, frozenPeriodOf, type FrozenPeriod } from "./frozen.ts";

/**
 * Restatement: each time the schedule has run interval D (the head), the runs of the `last`
 * intervals before D are run again, so rows that arrived after their day are picked up. This
 * file holds the decision; the scheduler reads the rows it needs and carries it out.
 *
 * The rule that makes it stateless: a run needs restating for D only if it last ended before D
 * fired. A run that ended after that moment already read everything a restatement for D would
 * read (its first run in a catch-up, a restatement already done for D, a manual rerun), so a
 * catch-up burst or a scheduler restart never restates the same interval twice for one D.
 */
export interface RestatePolicy {
  /** How many intervals before the newest scheduled one are run again. */
  last: number;
}

export const MAX_RESTATE_WINDOW = 1000;

/** What the decision needs to know of the run of one interval in the window. */
export interface WindowRun {
  runId: string;
  businessDate: string;
  intervalStart: number;
  state: RunState;
  endedAt: number | null;
  /** The backfill the run belongs to, if any. */
  backfillId: string | null;
}

export interface LiveBackfill {
  backfillId: string;
  /** Business dates it covers, inclusive. */
  fromDate: string;
  toDate: string;
}

export interface RestateInput {
  /** The newest interval the schedule has run (or is running): the window lies before it. */
  head: { businessDate: string; firesAt: number; live: boolean };
  /** Runs of the intervals in the window; intervals with no run (skipped, never ran) are absent. */
  window: readonly WindowRun[];
  frozen: readonly FrozenPeriod[];
  /** Running or paused backfills of the pipeline. */
  liveBackfills: readonly LiveBackfill[];
  /** Runs that may start now without passing the run cap's share for restatements. */
  room: number;
  formatTime?: (ms: number) => string;
}

/**
 * start: run it again now. wait: not now (why says until when). covered: nothing to do for this
 * head. refuse: never for this head, with the reason recorded (a frozen period): skipped, not failed.
 */
export type RestateAction = "start" | "wait" | "covered" | "refuse";

export interface RestateDecision {
  runId: string;
  businessDate: string;
  action: RestateAction;
  why: string;
}

/**
 * One decision per run of the window, newest interval first: when the window does not fit in
 * the room, the newest days (the likeliest to receive late rows) are restated first.
 */
export function decideRestatements(input: RestateInput): RestateDecision[] {
  const time = input.formatTime ?? ((ms: number) => new Date(ms).toISOString());
  const head = input.head.businessDate;
  let room = Math.max(0, input.room);
  const decisions: RestateDecision[] = [];
  for (const run of [...input.window].sort((a, b) => b.intervalStart - a.intervalStart)) {
    const decide = (action: RestateAction, why: string) => decisions.push({ runId: run.runId, businessDate: run.businessDate, action, why });
    if (run.state === "queued" || run.state === "running") {
      decide("wait", `run ${run.runId} is ${run.state}; once it ends it will have read what a restatement would`);
      continue;
    }
    if (run.endedAt !== null && run.endedAt >= input.head.firesAt) {
      decide("covered", `ran at ${time(run.endedAt)}, after ${head} was due: nothing new to pick up for ${head}`);
      continue;
    }
    const frozen = frozenPeriodOf(input.frozen, run.businessDate);
    if (frozen) {
      decide("refuse", `not restated after ${head}: ${describeFrozen(frozen)}`);
      continue;
    }
    const backfill = input.liveBackfills.find(
      (b) => b.backfillId === run.backfillId || (b.fromDate <= run.businessDate && run.businessDate <= b.toDate),
    );
    if (backfill) {
      decide("wait", `backfill ${backfill.backfillId} covers ${run.businessDate}; restating waits until it ends`);
      continue;
    }
    if (input.head.live) {
      decide("wait", `restated after ${head}'s own run ends`);
      continue;
    }
    if (room === 0) {
      decide("wait", "run cap: no room for restatements now (one slot stays free for the schedule)");
      continue;
    }
    room--;
    decide("start", `restating after ${head}`);
  }
  return decisions;
}

/**
 * Run slots restatements may take: what the run cap leaves, minus one kept free so that the
 * next scheduled interval starts on time (unless the cap is 1: restatements then take turns with
 * the schedule, which goes first whenever both are ready).
 */
export function restateRoom(maxActiveRuns: number, liveRuns: number): number {
  const reserve = maxActiveRuns > 1 ? 1 : 0;
  return Math.max(0, maxActiveRuns - reserve - liveRuns);
}

/**
 * The intervals of the window before `head`, newest first: at most `last`, none before the
 * pipeline's start.
 */
export function restateWindow(schedule: Timetable, head: Interval, last: number, start: number | null): Interval[] {
  const window: Interval[] = [];
  let cursor = head.start;
  while (window.length < last) {
    const previous = schedule.intervalAt(cursor - 1);
    if (previous.end > cursor || previous.start >= cursor) break;
    if (start !== null && previous.start < start) break;
    window.push(previous);
    cursor = previous.start;
  }
  return window;
}

/**
 * The task instances a restatement resets: every task that takes part (not `restate: false`),
 * and an opted-out task that never completed (failed or upstream_failed), since running it is
 * not a repeat. null: every task, so the whole run is run again.
 */
export function restatedTasks(
  tasks: readonly { taskId: string; restate: boolean }[],
  states: ReadonlyMap<string, TaskState>,
): string[] | null {
  if (tasks.every((t) => t.restate)) return null;
  return tasks
    .filter((t) => {
      if (t.restate) return true;
      const state = states.get(t.taskId);
      return state === "failed" || state === "upstream_failed";
    })
    .map((t) => t.taskId);
}
