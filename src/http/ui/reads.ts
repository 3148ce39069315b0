import { addDays } from "../../core/time/dates.ts";
import type { Engine } from "../../engine/engine.ts";
import type { ExpectedStatus } from "../../engine/scheduler/ledger.ts";
import type { TaskInstanceRecord } from "../../store/port.ts";

export interface GridRow {
  businessDate: string;
  runId: string | null;
  status: ExpectedStatus;
  note: string | null;
}

/**
 * The grid's rows, newest first: every interval the schedule says was due in the range (so a
 * missing day is a row too), or, for a manual pipeline, its runs; and their task instances.
 */
export async function gridOf(engine: Engine, pipelineId: string, range: { fromDate: string; toDate: string }): Promise<{ rows: GridRow[]; tasks: TaskInstanceRecord[] }> {
  const p = engine.pipeline(pipelineId);
  const expected = await engine.expected(pipelineId, { from: range.fromDate, to: addDays(range.toDate, 1) });
  // TEMPORARY until engine.taskGrid lands on i10 (one query): one read per run.
  const runs = (await engine.runs(pipelineId, 100_000)).filter((r) => r.businessDate >= range.fromDate && r.businessDate <= range.toDate);
  const tasks = (await Promise.all(runs.map((r) => engine.taskInstances(r.runId)))).flat();
  let rows: GridRow[];
  if (p.schedule.kind === "manual") {
    rows = runs.map((r) => ({ businessDate: r.businessDate, runId: r.runId, status: r.state, note: null }));
  } else {
    const seen = new Set(expected.map((e) => e.runId));
    rows = expected.map((e) => ({ businessDate: e.interval.businessDate, runId: e.runId, status: e.status, note: e.note }));
    // Runs for intervals the schedule does not name (an older schedule, a manual date) still show.
    for (const r of runs) if (!seen.has(r.runId)) rows.push({ businessDate: r.businessDate, runId: r.runId, status: r.state, note: null });
  }
  rows.sort((a, b) => (a.businessDate < b.businessDate ? 1 : a.businessDate > b.businessDate ? -1 : 0));
  return { rows, tasks };
}
