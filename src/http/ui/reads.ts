import { addDays } from "../../core/time/dates.ts";
import type { Engine } from "../../engine/engine.ts";
import type { ExpectedStatus } from "../../engine/scheduler/ledger.ts";
import type { TaskStateCell } from "../../store/port.ts";

/** More runs than a grid can show (a year of an hourly schedule is 8,760). */
const MAX_GRID_RUNS = 10_000;

export interface GridRow {
  businessDate: string;
  runId: string | null;
  status: ExpectedStatus;
  note: string | null;
  /** How often the schedule restated the run (its trailing window), when last, and why it last did not (a frozen date). */
  restate: Restatements | null;
}

export interface Restatements {
  count: number;
  lastAt: number | null;
  note: string | null;
}

function restatements(count: number, lastAt: number | null, note: string | null): Restatements | null {
  return count > 0 || note !== null ? { count, lastAt, note } : null;
}

/**
 * The grid's rows, newest first: every interval the schedule says was due in the range (so a
 * missing day is a row too), or, for a manual pipeline, its runs; and their task instances.
 */
export async function gridOf(engine: Engine, pipelineId: string, range: { fromDate: string; toDate: string }): Promise<{ rows: GridRow[]; tasks: TaskStateCell[] }> {
  const p = engine.pipeline(pipelineId);
  const expected = await engine.expected(pipelineId, { from: range.fromDate, to: addDays(range.toDate, 1) });
  // Two queries whatever the range: the runs, then the state of every task instance of them.
  const { items: runs } = await engine.runsPage(pipelineId, { fromDate: range.fromDate, toDate: range.toDate, limit: MAX_GRID_RUNS });
  const tasks = await engine.taskStatesOfRuns(runs.map((r) => r.runId));
  let rows: GridRow[];
  if (p.schedule.kind === "manual") {
    rows = runs.map((r) => ({ businessDate: r.businessDate, runId: r.runId, status: r.state, note: null, restate: restatements(r.restateCount, r.restatedAt, r.restateNote) }));
  } else {
    const seen = new Set(expected.map((e) => e.runId));
    rows = expected.map((e) => ({ businessDate: e.interval.businessDate, runId: e.runId, status: e.status, note: e.note, restate: restatements(e.restateCount, e.lastRestatedAt, e.restateNote) }));
    // Runs for intervals the schedule does not name (an older schedule, a manual date) still show.
    for (const r of runs) if (!seen.has(r.runId)) rows.push({ businessDate: r.businessDate, runId: r.runId, status: r.state, note: null, restate: restatements(r.restateCount, r.restatedAt, r.restateNote) });
  }
  rows.sort((a, b) => (a.businessDate < b.businessDate ? 1 : a.businessDate > b.businessDate ? -1 : 0));
  return { rows, tasks };
}

/** Why a run failed, as its on-call line: the failing attempt (its task, try, class) and the first line of its error. */
export interface Failure {
  taskId: string;
  tryNumber: number;
  errorClass: string | null;
  line: string;
}

export async function failureOf(engine: Engine, runId: string): Promise<Failure | null> {
  // One row per task: a run that maps 100,000 items costs what one that maps none does.
  const [tasks, ownAttempts] = await Promise.all([engine.taskRows(runId), engine.taskRowAttempts(runId)]);
  let attempts = ownAttempts;
  let failed = new Set(tasks.filter((t) => t.state === "failed" && !t.mapped?.states.failed).map((t) => t.taskId));
  const mapped = tasks.find((t) => t.state === "failed" && t.mapped?.states.failed);
  if (failed.size === 0 && mapped) {
    // A mapped task failed because its instances did: the first failed key tells why.
    const [instance] = (await engine.mappedInstances(runId, mapped.taskId, { states: ["failed"], limit: 1 })).items;
    if (instance) {
      attempts = await engine.attempts(runId, instance.taskId);
      failed = new Set([instance.taskId]);
    }
  }
  // The latest attempt of a task that is failed now: an earlier try that a retry fixed is not the cause.
  const attempt = attempts.filter((a) => failed.has(a.taskId) && a.errorMessage).at(-1);
  if (!attempt) return null;
  const line = attempt.errorMessage!.split("\n").find((l) => l.trim() !== "")?.trim() ?? "";
  return { taskId: attempt.taskId, tryNumber: attempt.tryNumber, errorClass: attempt.errorClass, line };
}
