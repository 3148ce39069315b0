import type { WriteContext } from "./context.ts";
import { ident, sql, trusted } from "./sql.ts";
import type { Target } from "./target.ts";

export type Operation = "replaceWhere" | "mergeByKey" | "append" | "incremental";

export interface WriteCounts {
  deleted: number;
  inserted: number;
  updated: number;
  unchanged: number;
}

export interface HistoryEntry {
  id: number;
  table: string;
  operation: string;
  /** Null for a plain append: it replaced nothing. */
  predicate: string | null;
  rowsDeleted: number;
  rowsInserted: number;
  rowsUpdated: number;
  rowsUnchanged: number;
  rowsWritten: number;
  runId: string | null;
  pipelineId: string | null;
  taskId: string | null;
  tryNumber: number | null;
  batchId: string | null;
  businessDate: string | null;
  frozenOverride: string | null;
  writtenAt: string;
}

/** Written inside the write's transaction, so history and rows commit or vanish together. */
export async function recordHistory(
  target: Target,
  entry: { table: string; operation: Operation; predicate: string | null; counts: WriteCounts; context: WriteContext; frozenOverride: string | null; at: Date },
): Promise<void> {
  const { counts, context } = entry;
  await target.exec(sql`INSERT INTO _idem_history (table_name, operation, predicate, rows_deleted, rows_inserted,
      rows_updated, rows_unchanged, rows_written, run_id, pipeline_id, task_id, try_number, batch_id, business_date,
      frozen_override, written_at)
    VALUES (${entry.table}, ${entry.operation}, ${entry.predicate}, ${counts.deleted}, ${counts.inserted},
      ${counts.updated}, ${counts.unchanged}, ${counts.inserted + counts.updated}, ${context.runId}, ${context.pipelineId},
      ${context.taskId}, ${context.tryNumber}, ${context.batchId ?? null}, ${context.businessDate ?? null},
      ${entry.frozenOverride}, ${entry.at.toISOString()})`);
}

/**
 * Claims a batch id for a table inside the open transaction. False means it was applied before
 * (or by a concurrent writer that committed first), and the write must be a no-op.
 */
export async function claimBatch(target: Target, table: string, context: WriteContext, at: Date): Promise<boolean> {
  if (!context.batchId) return true;
  const claimed = await target.exec(sql`INSERT INTO _idem_batches (table_name, batch_id, run_id, written_at)
    VALUES (${table}, ${context.batchId}, ${context.runId}, ${at.toISOString()}) ON CONFLICT DO NOTHING`);
  return claimed > 0;
}

/** The table's writes, newest first, like Delta Lake's DESCRIBE HISTORY. */
export async function readHistory(target: Target, table: string, options: { limit?: number } = {}): Promise<HistoryEntry[]> {
  if ((await target.tableColumns("_idem_history")) === null) return [];
  const limit = Math.max(1, Math.floor(options.limit ?? 20));
  const rows = await target.query(sql`SELECT * FROM ${ident("_idem_history")} WHERE table_name = ${table}
    ORDER BY id DESC LIMIT ${trusted(String(limit))}`);
  const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return rows.map((r) => ({
    id: Number(r.id),
    table: String(r.table_name),
    operation: String(r.operation),
    predicate: text(r.predicate),
    rowsDeleted: Number(r.rows_deleted),
    rowsInserted: Number(r.rows_inserted),
    rowsUpdated: Number(r.rows_updated),
    rowsUnchanged: Number(r.rows_unchanged),
    rowsWritten: Number(r.rows_written),
    runId: text(r.run_id),
    pipelineId: text(r.pipeline_id),
    taskId: text(r.task_id),
    tryNumber: num(r.try_number),
    batchId: text(r.batch_id),
    businessDate: text(r.business_date),
    frozenOverride: text(r.frozen_override),
    writtenAt: String(r.written_at),
  }));
}

/** A fixed-width table for a terminal, newest first; `--json` callers print the entries instead. */
export function formatHistory(entries: readonly HistoryEntry[]): string {
  if (entries.length === 0) return "no writes recorded";
  const header = ["id", "written at", "operation", "predicate", "deleted", "written", "run", "task", "try", "batch", "note"];
  const rows = entries.map((e) => [
    String(e.id),
    e.writtenAt.replace("T", " ").replace(/\.\d+Z$/, "Z"),
    e.operation,
    e.predicate ?? "-",
    String(e.rowsDeleted),
    String(e.rowsWritten),
    e.runId ?? "-",
    e.taskId ?? "-",
    e.tryNumber === null ? "-" : String(e.tryNumber),
    e.batchId ?? "-",
    e.frozenOverride ? `frozen opened: ${e.frozenOverride}` : "",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}
