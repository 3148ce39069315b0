import { describeFrozen, frozenPeriodOf, type FrozenPeriod } from "../../core/policy/frozen.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import { formatInstant } from "../../core/time/dates.ts";
import type { Interval } from "../../core/time/interval.ts";
import type { Due } from "../../core/time/timetable.ts";
import { intervalName } from "../../core/time/interval-name.ts";
import type { SchedulingStore } from "../../store/port.ts";
import { scheduleFrom } from "./scheduler.ts";

/** Counting further than this buys nothing for a line a person reads. */
const COUNT_CAP = 10_000;

export interface OutlookEnvironment {
  store: Pick<SchedulingStore, "pipelineState" | "ledger">;
  /** The next fires of a pipeline's own intervals (from its start on). */
  preview(pipelineId: string, count: number): Due[];
  frozenPeriods(pipelineId: string): FrozenPeriod[];
}

/**
 * What a scheduler starting now will do for each pipeline, one line each: the intervals it catches
 * up first (how many, which, how many at once, or what catch-up "latest" skips), and its next fire
 * with the business date that fire loads. Said at the start of `idem dev`, so that nobody waits for
 * a run that is not coming, or is surprised by ninety that are.
 */
export async function schedulerOutlook(env: OutlookEnvironment, pipelines: readonly Pipeline[], now: number): Promise<string[]> {
  const lines: string[] = [];
  for (const pipeline of [...pipelines].sort((a, b) => a.id.localeCompare(b.id))) {
    lines.push(`${pipeline.id}: ${await outlookOf(env, pipeline, now)}`);
  }
  return lines;
}

async function outlookOf(env: OutlookEnvironment, pipeline: Pipeline, now: number): Promise<string> {
  const datasets = pipeline.triggerOn.length > 0 ? `runs when ${pipeline.triggerOn.join(", ")} ${pipeline.triggerOn.length === 1 ? "is" : "are"} published` : "";
  if (pipeline.schedule.kind === "manual") return datasets || "manual schedule: runs only when asked";
  const tz = pipeline.schedule.timezone;
  const name = (i: Interval) => intervalName(pipeline.schedule, i);
  const next = env.preview(pipeline.id, 1)[0];
  const parts: string[] = [];
  const state = await env.store.pipelineState(pipeline.id, now);
  const from = scheduleFrom(pipeline, state);
  const dueAfterCursor = from === undefined ? [] : pipeline.schedule.dueBetween(from, now, COUNT_CAP + 1).filter((d) => pipeline.end === null || d.interval.start < pipeline.end);
  // An interval with a run already (an operator's, a backfill's) is passed over, not run again.
  const ran = dueAfterCursor.length === 0 ? new Set<number>()
    : new Set((await env.store.ledger(pipeline.id, dueAfterCursor[0]!.interval.start, dueAfterCursor.at(-1)!.interval.end)).runs.map((r) => r.intervalStart));
  const due = dueAfterCursor.filter((d) => !ran.has(d.interval.start));
  if (due.length > 0) {
    const count = due.length > COUNT_CAP ? `more than ${COUNT_CAP}` : String(due.length);
    const range = `${name(due[0]!.interval)}${due.length > 1 ? `..${name(due.at(-1)!.interval)}` : ""}`;
    const frozen = due.filter((d) => frozenPeriodOf(env.frozenPeriods(pipeline.id), d.interval.businessDate));
    const frozenNote = frozen.length > 0 ? ` (${frozen.length} frozen, skipped: ${describeFrozen(frozenPeriodOf(env.frozenPeriods(pipeline.id), frozen[0]!.interval.businessDate)!)})` : "";
    if (state.paused) parts.push(`paused${state.pausedNote ? ` (${state.pausedNote})` : ""}: ${count} interval(s) due, ${range}, wait until it is unpaused`);
    else if (pipeline.catchup === "latest" && due.length > 1) parts.push(`catch-up "latest": runs ${name(due.at(-1)!.interval)} now and skips the ${due.length - 1} interval(s) before it`);
    else parts.push(`catches up ${count} interval(s) now, ${range}, up to ${pipeline.maxActiveRuns} at once${frozenNote}`);
  } else if (state.paused) {
    parts.push(`paused${state.pausedNote ? ` (${state.pausedNote})` : ""}: nothing runs until it is unpaused`);
  }
  if (next) parts.push(`next fire ${formatInstant(next.firesAt, tz)} loads ${name(next.interval)}`);
  else if (due.length === 0) parts.push("past its end: no interval left to run");
  if (datasets) parts.push(datasets);
  return parts.join("; ");
}
