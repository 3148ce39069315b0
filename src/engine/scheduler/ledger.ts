import { runIdFor } from "../../core/model/run-id.ts";
import { didNotRun, judgeUnrunInterval, type SchedulerPresence, type UnrunCause } from "../../core/policy/expected-run.ts";
import type { TriggerKind } from "../../core/model/states.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import type { Interval } from "../../core/time/interval.ts";
import type { PipelineState, RunStore, SchedulingStore, WorkerStore } from "../../store/port.ts";
import { schedulerPresence } from "./presence.ts";
import { duesBetween } from "./due-cache.ts";
import { DEFAULTS } from "../project/defaults.ts";

export type ExpectedStatus = "success" | "failed" | "running" | "queued" | "skipped" | "pending" | "missing" | "not_due";

export interface ExpectedRun {
  interval: Interval;
  firesAt: number;
  status: ExpectedStatus;
  runId: string | null;
  /** Why it was skipped, why it is pending, or why it is missing. */
  note: string | null;
  /** How the run came to exist or last ran again ("restate": the trailing window); null without a run. */
  trigger: TriggerKind | null;
  /** How often the schedule restated the run, when it last did, and why it last did not (frozen). */
  restateCount: number;
  lastRestatedAt: number | null;
  restateNote: string | null;
  /** For pending and missing: what holds it up. */
  cause: UnrunCause | null;
  /** Missing past the grace, for a cause that is not a dead scheduler: a "did not run" incident. */
  didNotRun: boolean;
}

/** A due interval with no run this long after it fired, and no scheduler progressing toward it, did not run. Default 10 minutes. */

export interface LedgerOptions {
  graceMs?: number;
  /** Who leads the scheduler (read from the store when not given). */
  scheduler?: SchedulerPresence;
}

/**
 * The ledger of expected runs: every interval the schedule says was due in [from, to), with what
 * became of it. A due interval with no run is "pending" while a live scheduler progresses toward
 * it (a catch-up under the run cap) and "missing" when nothing will create it by itself.
 */
export async function expectedRuns(
  store: SchedulingStore & RunStore & WorkerStore,
  pipeline: Pipeline,
  range: { from: number; to: number },
  now: number,
  options: LedgerOptions = {},
): Promise<ExpectedRun[]> {
  if (pipeline.schedule.kind === "manual") return [];
  const state = await store.pipelineState(pipeline.id, now);
  // The scheduler owns intervals from `start`, or (without one) from the first due after it first saw the pipeline.
  const owned = pipeline.start ?? pipeline.schedule.nextDue(state.createdAt)?.interval.start ?? Infinity;
  const from = Math.max(range.from, owned);
  const to = Math.min(range.to, pipeline.end ?? Infinity);
  if (!(to > from)) return [];
  const dues = duesBetween(pipeline.schedule, from, to);
  const { runs, skipped } = await store.ledger(pipeline.id, from, to);
  const runAt = new Map(runs.map((r) => [`${r.intervalStart}/${r.intervalEnd}`, r]));
  const skipAt = new Map(skipped.map((s) => [`${s.intervalStart}/${s.intervalEnd}`, s]));
  const liveRuns = await store.countLiveRuns(pipeline.id);
  const scheduler = options.scheduler ?? (await schedulerPresence(store, now));
  const graceMs = options.graceMs ?? DEFAULTS.didNotRunGraceMs;
  let lastProgressAt: number | null | undefined;
  const out: ExpectedRun[] = [];
  for (const { interval, firesAt } of dues) {
    const key = `${interval.start}/${interval.end}`;
    const run = runAt.get(key);
    const none = { cause: null, didNotRun: false, trigger: null, restateCount: 0, lastRestatedAt: null, restateNote: null };
    if (run) {
      out.push({
        interval, firesAt, status: run.state, runId: run.runId, note: null, ...none, trigger: run.trigger,
        restateCount: run.restateCount, lastRestatedAt: run.restatedAt, restateNote: run.restateNote,
      });
      continue;
    }
    const skip = skipAt.get(key);
    if (skip) {
      out.push({ interval, firesAt, status: "skipped", runId: null, note: skip.reason, ...none });
      continue;
    }
    if (firesAt > now) {
      out.push({ interval, firesAt, status: "not_due", runId: null, note: null, ...none });
      continue;
    }
    lastProgressAt ??= await cursorMovedAt(store, pipeline, state);
    const facts = {
      intervalStart: interval.start, firesAt, now, graceMs, paused: state.paused, pausedNote: state.pausedNote,
      cursor: state.scheduleCursor, liveRuns, maxActiveRuns: pipeline.maxActiveRuns, lastProgressAt, scheduler,
    };
    const verdict = judgeUnrunInterval(facts);
    out.push({ interval, firesAt, status: verdict.status, runId: null, note: verdict.note, ...none, cause: verdict.cause, didNotRun: didNotRun(facts, verdict) });
  }
  return out;
}

/** When the scheduler last moved the pipeline's cursor: the creation of the run (or skip) ending there. */
async function cursorMovedAt(store: SchedulingStore & RunStore, pipeline: Pipeline, state: PipelineState): Promise<number | null> {
  if (state.scheduleCursor === null) return state.createdAt;
  const last = pipeline.schedule.intervalAt(state.scheduleCursor - 1);
  const run = await store.getRun(runIdFor(pipeline.id, last));
  if (run) return run.createdAt;
  const { skipped } = await store.ledger(pipeline.id, last.start, last.end);
  return skipped.at(-1)?.at ?? null;
}

/**
 * The start of the newest `count` intervals that begin at or after `notBefore` and end by `to`
 * (an interval boundary): a window bounded in intervals, so a schedule every second is not
 * walked over a week.
 */
export function recentIntervalsFrom(pipeline: Pipeline, to: number, notBefore: number, count: number): number {
  let cursor = to;
  for (let i = 0; i < count; i++) {
    const previous = pipeline.schedule.intervalAt(cursor - 1);
    if (previous.start < notBefore) break;
    cursor = previous.start;
  }
  return Math.max(cursor, notBefore);
}
