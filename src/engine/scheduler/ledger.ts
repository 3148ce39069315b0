import type { TriggerKind } from "../../core/model/states.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import type { Interval } from "../../core/time/interval.ts";
import type { PipelineState, Store } from "../../store/port.ts";

export type ExpectedStatus = "success" | "failed" | "running" | "queued" | "skipped" | "missing" | "not_due";

export interface ExpectedRun {
  interval: Interval;
  firesAt: number;
  status: ExpectedStatus;
  runId: string | null;
  /** Why it was skipped, or why it is missing. */
  note: string | null;
  /** How the run came to exist or last ran again ("restate": the trailing window); null without a run. */
  trigger: TriggerKind | null;
  /** How often the schedule restated the run, when it last did, and why it last did not (frozen). */
  restateCount: number;
  lastRestatedAt: number | null;
  restateNote: string | null;
}

/**
 * The ledger of expected runs: every interval the schedule says was due in [from, to), with what
 * became of it. "missing" is the answer to "did not run": due, no run, not skipped by policy.
 */
export async function expectedRuns(
  store: Store,
  pipeline: Pipeline,
  range: { from: number; to: number },
  now: number,
): Promise<ExpectedRun[]> {
  const from = Math.max(range.from, pipeline.start ?? -Infinity);
  const to = Math.min(range.to, pipeline.end ?? Infinity);
  if (!(to > from) || pipeline.schedule.kind === "manual") return [];
  const intervals = pipeline.schedule.intervalsBetween(from, to);
  const { runs, skipped } = await store.ledger(pipeline.id, from, to);
  const runAt = new Map(runs.map((r) => [`${r.intervalStart}/${r.intervalEnd}`, r]));
  const skipAt = new Map(skipped.map((s) => [`${s.intervalStart}/${s.intervalEnd}`, s]));
  const state = await store.pipelineState(pipeline.id, now);
  const liveRuns = await store.countLiveRuns(pipeline.id);
  return intervals.map((interval) => {
    const key = `${interval.start}/${interval.end}`;
    const firesAt = pipeline.schedule.firesAt(interval);
    const run = runAt.get(key);
    if (run) {
      return {
        interval, firesAt, status: run.state, runId: run.runId, note: null, trigger: run.trigger,
        restateCount: run.restateCount, lastRestatedAt: run.restatedAt, restateNote: run.restateNote,
      };
    }
    const none = { trigger: null, restateCount: 0, lastRestatedAt: null, restateNote: null };
    const skip = skipAt.get(key);
    if (skip) return { interval, firesAt, status: "skipped", runId: null, note: skip.reason, ...none };
    if (firesAt > now) return { interval, firesAt, status: "not_due", runId: null, note: null, ...none };
    return { interval, firesAt, status: "missing", runId: null, note: missingCause(state, interval, liveRuns, pipeline.maxActiveRuns), ...none };
  });
}

function missingCause(state: PipelineState, interval: Interval, liveRuns: number, maxActiveRuns: number): string {
  if (state.paused) return `pipeline is paused${state.pausedNote ? ` (${state.pausedNote})` : ""}`;
  if (state.scheduleCursor !== null && state.scheduleCursor > interval.start) {
    return "passed over by the scheduler without a run (was the schedule or start changed?)";
  }
  if (liveRuns >= maxActiveRuns) return `waiting for the run cap (${liveRuns} of ${maxActiveRuns} runs active)`;
  return "no scheduler has created it yet: is `idem scheduler` running?";
}
