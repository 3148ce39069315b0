import { randomBytes } from "node:crypto";
import { DataError, DefinitionError } from "../../core/model/errors.ts";
import type { Check } from "../checks.ts";
import type { WriteContext } from "../context.ts";
import { guardFrozen, type FrozenPeriod } from "../frozen.ts";
import type { Operation, WriteCounts } from "../history.ts";
import { sourceColumns } from "../sources/source-columns.ts";
import { loadError } from "../sources/load-source.ts";
import { normalizeSchema, type SchemaInput } from "../schema.ts";
import type { Source, SourceSpec } from "../sources/source.ts";
import { ident, sql, type Sql } from "../sql.ts";
import type { StepHook, WriteStep } from "../steps.ts";
import type { TableColumn, Target } from "../target.ts";

/** What every SQL loader takes. */
export interface LoadOptions {
  target: Target;
  table: string;
  source: Source;
  context: WriteContext;
  /** The table's schema, used to create it on the first load; without it, the source's. */
  columns?: SchemaInput;
  checks?: readonly Check[];
  frozen?: readonly FrozenPeriod[];
  /** Writes into frozen dates anyway; the reason is recorded in history. */
  openFrozen?: { reason: string };
  /** A column of business dates: the staged rows' dates are checked against frozen periods too. */
  dateColumn?: string;
  onStep?: StepHook;
  /** Rows per round trip when rows are moved into the target (default 20,000). */
  batchRows?: number;
  /** The clock for history times; tests pass a fixed one. */
  now?: () => Date;
}

export interface WriteSummary {
  table: string;
  operation: Operation;
  predicate: string | null;
  rowsStaged: number;
  rowsDeleted: number;
  rowsInserted: number;
  rowsUpdated: number;
  rowsUnchanged: number;
  rowsWritten: number;
  /** Why nothing was written, e.g. the batch id was applied before; null when the write happened. */
  skipped: string | null;
  frozenOverride: string | null;
}

export function summary(table: string, operation: Operation, predicate: string | null, staged: number, counts: WriteCounts, frozenOverride: string | null, skipped: string | null = null): WriteSummary {
  return {
    table,
    operation,
    predicate,
    rowsStaged: staged,
    rowsDeleted: counts.deleted,
    rowsInserted: counts.inserted,
    rowsUpdated: counts.updated,
    rowsUnchanged: counts.unchanged,
    rowsWritten: counts.inserted + counts.updated,
    skipped,
    frozenOverride,
  };
}

export const NOTHING: WriteCounts = { deleted: 0, inserted: 0, updated: 0, unchanged: 0 };

export function stepper(options: LoadOptions) {
  return async (step: WriteStep, rows?: number) => {
    await options.onStep?.(step, rows === undefined ? { table: options.table } : { table: options.table, rows });
  };
}

/** Creates the bookkeeping tables and the table itself when missing; returns its columns. */
export async function prepareTable(options: LoadOptions, source: SourceSpec): Promise<TableColumn[]> {
  const { target, table } = options;
  if (table.startsWith("_idem_")) throw new DefinitionError(`${table}: names starting with _idem_ are idem's own tables`);
  await target.ensureBookkeeping();
  const existing = await target.tableColumns(table);
  const declared = options.columns ? normalizeSchema(options.columns, `table ${table}`) : null;
  if (existing) {
    const missing = (declared ?? []).filter((c) => !existing.some((e) => e.name === c.name)).map((c) => c.name);
    if (missing.length > 0) throw new DefinitionError(`table ${table} on ${target.label} exists without declared column(s) ${missing.join(", ")}`);
    return existing;
  }
  const columns = declared ?? (await sourceColumns(target, source).catch((error: unknown) => {
    throw loadError(target, table, source, error, "reading", options.context);
  }));
  await target.createTable(table, columns);
  const created = await target.tableColumns(table);
  if (!created) throw new Error(`table ${table} on ${target.label} was not created`);
  return created;
}

export function requireColumns(table: string, columns: readonly TableColumn[], names: readonly string[], what: string) {
  const missing = names.filter((n) => !columns.some((c) => c.name === n));
  if (missing.length > 0) throw new DefinitionError(`${what}: table ${table} has no column(s) ${missing.join(", ")}`);
}

export function contextDates(context: WriteContext): { from: string; to: string }[] {
  return context.businessDate ? [{ from: context.businessDate, to: context.businessDate }] : [];
}

/** Checks the staged rows' business dates (min..max of dateColumn) against frozen periods. */
export async function guardStagedDates(options: LoadOptions, label: string, relation: Sql): Promise<string | null> {
  if (!options.dateColumn || !options.frozen?.length) return null;
  const rows = await options.target.query(sql`SELECT CAST(min(${ident(options.dateColumn)}) AS VARCHAR(32)) AS lo, CAST(max(${ident(options.dateColumn)}) AS VARCHAR(32)) AS hi FROM ${relation} AS ${ident("staged")}`);
  const lo = rows[0]?.lo;
  const hi = rows[0]?.hi;
  if (lo == null || hi == null) return null;
  return guardFrozen(label, [{ from: String(lo).slice(0, 10), to: String(hi).slice(0, 10) }], options.frozen, options.openFrozen);
}

export function stagingName(): string {
  return `_idem_stage_${randomBytes(6).toString("hex")}`;
}

export function outsideError(label: string, outside: number, what: string, sample: readonly Record<string, unknown>[]): DataError {
  const rows = outside === 1 ? "1 staged row falls" : `${outside} staged rows fall`;
  const eg = sample.length ? `, e.g. ${sample.map((r) => JSON.stringify(r)).join(" ")}` : "";
  return new DataError(`${label}: ${rows} outside ${what}${eg}; nothing written`, { outside, sample });
}
