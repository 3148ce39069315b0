import type { TaskState } from "../core/model/states.ts";
import { remoteJobHoldsSlots, type ClaimCandidate, type RemoteHolder } from "../core/policy/claim-plan.ts";
import type { WaitingTask } from "../core/policy/run-progress.ts";
import type { TriggerRule } from "../core/policy/trigger-rules.ts";
import { MAX_SUMMARY_BYTES, StoreConflictError, type PoolUsage } from "./port.ts";
import type { Row } from "./row-mappers.ts";

/**
 * The rows both adapters read for core's decisions, turned into the decisions' inputs (and the
 * reads that assemble the same record from the same rows). SQL stays in each adapter's sql.ts.
 */

/**
 * Waiting task instances from rows of (task_id, trigger_rule, upstream, upstream_state), one row
 * per parent (upstream null for a task with none), in the rows' order.
 */
export function waitingTasks(rows: readonly Row[]): WaitingTask[] {
  const tasks = new Map<string, { taskId: string; triggerRule: TriggerRule; parents: Map<string, TaskState> }>();
  for (const r of rows) {
    let task = tasks.get(r.task_id);
    if (!task) {
      task = { taskId: r.task_id, triggerRule: r.trigger_rule as TriggerRule, parents: new Map() };
      tasks.set(r.task_id, task);
    }
    if (r.upstream !== null && r.upstream !== undefined) task.parents.set(r.upstream, r.upstream_state as TaskState);
  }
  return [...tasks.values()];
}

/** The same, grouped by the `parent` column (the task whose waiting children they are). */
export function waitingTasksByParent(rows: readonly Row[]): Map<string, WaitingTask[]> {
  const byParent = new Map<string, Row[]>();
  for (const r of rows) {
    if (!byParent.has(r.parent)) byParent.set(r.parent, []);
    byParent.get(r.parent)!.push(r);
  }
  return new Map([...byParent].map(([parent, children]) => [parent, waitingTasks(children)]));
}

/** A claim candidate row (run_id, task_id, pipeline_id, pool, slots, priority, waited_since, due, background). */
export type CandidateRow = ClaimCandidate & { row: Row };

export function claimCandidate(row: Row): CandidateRow {
  return {
    taskId: row.task_id,
    pipelineId: row.pipeline_id,
    pool: row.pool,
    slots: row.slots,
    priority: row.priority,
    waitedSince: row.waited_since === null ? null : Number(row.waited_since),
    due: row.due === true || row.due === 1,
    background: row.background === true || row.background === 1,
    row,
  };
}

/** A remote-holder row (run_id, task_id, pool, slots, job_state, task_state) as core reads it. */
export function remoteHolder(row: Row): RemoteHolder {
  return { runId: row.run_id, taskId: row.task_id, pool: row.pool, slots: Number(row.slots), jobState: row.job_state, taskState: row.task_state };
}

/**
 * Pools with who holds their slots: running task instances, and the remote jobs that hold
 * slots while their task instance waits between polls (core's withRemoteHolds: each task
 * instance once; a running one is listed as running).
 */
export function poolUsage(poolRows: readonly Row[], holderRows: readonly Row[], remoteRows: readonly Row[]): PoolUsage[] {
  const pools = new Map<string, PoolUsage>(
    poolRows.map((p) => [p.name, { name: p.name, slots: p.slots, used: 0, description: p.description, holders: [] }]),
  );
  for (const h of holderRows) {
    const pool = pools.get(h.pool);
    if (!pool) continue;
    pool.used += Number(h.slots);
    pool.holders.push({ runId: h.run_id, taskId: h.task_id, slots: Number(h.slots), workerId: h.worker_id, remote: false });
  }
  for (const h of remoteRows.map(remoteHolder)) {
    const pool = pools.get(h.pool);
    if (!pool || h.taskState === "running" || !remoteJobHoldsSlots(h)) continue;
    pool.used += h.slots;
    pool.holders.push({ runId: h.runId, taskId: h.taskId, slots: h.slots, workerId: null, remote: true });
  }
  return [...pools.values()];
}

/** Durations (ms) by task from rows of (task_id, ms), newest first. */
export function durationsByTask(rows: readonly Row[]): Map<string, number[]> {
  const durations = new Map<string, number[]>();
  for (const r of rows) {
    if (!durations.has(r.task_id)) durations.set(r.task_id, []);
    durations.get(r.task_id)!.push(r.ms);
  }
  return durations;
}

/** Mapped tasks' item counts (task_id, map_total), in the rows' order, by task. */
export function countsByTask(rows: readonly Row[]): Map<string, number[]> {
  const counts = new Map<string, number[]>();
  for (const r of rows) {
    if (!counts.has(r.task_id)) counts.set(r.task_id, []);
    counts.get(r.task_id)!.push(Number(r.map_total));
  }
  return counts;
}

/** Dataset waits (business_date, dataset) by business date. */
export function datasetWaits(rows: readonly Row[]): Map<string, Set<string>> {
  const waits = new Map<string, Set<string>>();
  for (const w of rows) {
    if (!waits.has(w.business_date)) waits.set(w.business_date, new Set());
    waits.get(w.business_date)!.add(w.dataset);
  }
  return waits;
}

/** Beyond any epoch-millisecond time or id: the open end of a range. */
export const FAR = 8.64e15;

/** The attempt (a row of attempt and task instance columns) is still the one its task instance is running: its writes count. */
export function isCurrentAttempt(a: Row | undefined, attemptId: number): boolean {
  return !!a && a.state === "running" && a.ti_state === "running" && Number(a.current_attempt_id) === attemptId;
}

/** The store keeps counts, not data: a summary over the limit is refused before anything is written. */
export function assertSummaryFits(summary: string | null): void {
  if (summary === null || Buffer.byteLength(summary) <= MAX_SUMMARY_BYTES) return;
  throw new StoreConflictError(`summary is ${Buffer.byteLength(summary)} bytes; the store keeps at most ${MAX_SUMMARY_BYTES} (counts, not data)`);
}
