import { DataError, DefinitionError, IdemError } from "../../core/model/errors.ts";
import { copyThroughCsv } from "./bulk-copy.ts";
import { passthroughColumns, recordsWithConstants } from "./csv-passthrough.ts";
import { fileSelect, withMemoryDuckDB } from "./duckdb-read.ts";
import type { Column } from "../schema.ts";
import { sourceColumns } from "./source-columns.ts";
import { describeSource, type FileSpec, type RowsProgress, type SourceSpec } from "./source.ts";
import { ident, identList, joinSql, sql, type SqlValue } from "../sql.ts";
import type { TableColumn, Target } from "../target.ts";
import { explainDuckDBError } from "../targets/duckdb.ts";
import { writerPrefix, type WriteContext } from "../context.ts";

/** Rows moved per round trip when a target cannot read the source itself. */
export const DEFAULT_BATCH_ROWS = 20_000;

/**
 * Inserts every row of the source into `table` (which has `columns`), and returns how many.
 * The source must provide exactly the table's columns, by name.
 */
export async function loadSource(
  target: Target, table: string, columns: readonly TableColumn[], source: SourceSpec, onRows?: RowsProgress, batchRows = DEFAULT_BATCH_ROWS, label = table,
  context?: WriteContext,
): Promise<number> {
  if (!Number.isInteger(batchRows) || batchRows < 1) throw new DefinitionError(`batchRows must be a whole number >= 1, not ${batchRows}`);
  try {
    return await load(target, table, columns, source, onRows, batchRows, label);
  } catch (error) {
    throw loadError(target, label, source, error, "loading", context);
  }
}

/**
 * One line naming the writer (pipeline, task, business date), the table or partition and the
 * source (its file). A value that does not parse or fit is a DataError (never retried); anything
 * else (a missing file, a lost connection) stays retryable.
 */
export function loadError(target: Target, table: string, source: SourceSpec, error: unknown, doing = "loading", context?: WriteContext): Error {
  if (error instanceof IdemError) return error;
  const explained = target.explainError(error) ?? explainDuckDBError(error);
  const text = (explained?.message ?? String(error instanceof Error ? error.message : error)).split("\n")[0]!.trim();
  const message = `${writerPrefix(context)}${table}: ${doing} ${describeSource(source)} failed: ${text}`;
  return explained?.isData ? new DataError(message, { cause: error instanceof Error ? error.message : String(error) }) : new Error(message, { cause: error });
}

async function load(target: Target, table: string, columns: readonly TableColumn[], source: SourceSpec, onRows: RowsProgress | undefined, batchRows: number, label: string): Promise<number> {
  // No rows say nothing about columns; an empty load is still a load (it empties a day).
  if (source.kind === "rows" && source.rows.length === 0 && !source.columns) {
    await onRows?.(0);
    return 0;
  }
  const provided = await sourceColumns(target, source);
  matchColumns(label, columns, provided, source);
  switch (source.kind) {
    case "csv":
    case "json":
    case "parquet":
      if (target.readsFiles && target.insertFromFile) {
        await onRows?.(0);
        return target.insertFromFile(table, columns, fileSelect(source));
      }
      return moveFileRows(target, table, columns, source, provided, onRows, batchRows);
    case "rows":
      return insertInBatches(target, table, columns, jsRows(source.rows, columns, source.constants), onRows, batchRows);
    case "query":
      break;
  }
  if (source.from && source.from !== target) {
    const rows = await source.from.query(source.sql);
    return insertInBatches(target, table, columns, jsRows(rows, columns, source.constants), onRows, batchRows);
  }
  await onRows?.(0);
  const constants = source.constants;
  const exprs = columns.map((c) => target.cast(c.name in constants ? sql`${constants[c.name] ?? null}` : sql`${ident("src")}.${ident(c.name)}`, c.sqlType));
  return target.exec(sql`INSERT INTO ${ident(table)} (${identList(columns.map((c) => c.name))}) SELECT ${joinSql(exprs)} FROM (${source.sql}) AS ${ident("src")}`);
}

function matchColumns(table: string, columns: readonly TableColumn[], provided: readonly Column[], source: SourceSpec) {
  const have = new Set(provided.map((c) => c.name));
  const want = new Set(columns.map((c) => c.name));
  const missing = columns.filter((c) => !have.has(c.name)).map((c) => c.name);
  const extra = provided.filter((c) => !want.has(c.name)).map((c) => c.name);
  if (missing.length > 0) throw new DefinitionError(`${describeSource(source)} does not provide column(s) ${missing.join(", ")} of table ${table}`);
  if (extra.length > 0) throw new DefinitionError(`${describeSource(source)} has column(s) ${extra.join(", ")} that table ${table} does not`);
}

async function moveFileRows(target: Target, table: string, columns: readonly TableColumn[], source: FileSpec, provided: readonly Column[], onRows: RowsProgress | undefined, batchRows: number) {
  if (target.copyCsv) {
    const order = source.kind === "csv" ? await passthroughColumns(source, columns) : null;
    if (order && source.kind === "csv") {
      const byName = new Map(columns.map((c) => [c.name, c]));
      await onRows?.(0);
      return target.copyCsv(table, order.map((n) => byName.get(n)!), recordsWithConstants(source.path, Object.values(source.constants), onRows));
    }
    // DuckDB's CSV writer formats each type itself; booleans come out as true/false.
    const raw = sql`SELECT ${identList(columns.map((c) => c.name))} FROM (${fileSelect(source)}) AS ${ident("src")}`;
    return copyThroughCsv(target, table, columns, raw, onRows);
  }
  const typeOf = new Map(provided.map((c) => [c.name, c.type]));
  // Everything travels as text; booleans as 1/0, which PostgreSQL and SQLite both read back.
  const exprs = columns.map((c) => {
    const value = sql`${ident("src")}.${ident(c.name)}`;
    return typeOf.get(c.name) === "boolean" ? sql`CAST(CAST(${value} AS INTEGER) AS VARCHAR)` : sql`CAST(${value} AS VARCHAR)`;
  });
  const select = sql`SELECT ${joinSql(exprs)} FROM (${fileSelect(source)}) AS ${ident("src")}`;
  return withMemoryDuckDB(async (duck) => {
    let written = 0;
    await onRows?.(0);
    for await (const batch of duck.batches(select, batchRows)) {
      written += await target.insertRows(table, columns, batch);
      await onRows?.(written);
    }
    return written;
  });
}

async function insertInBatches(target: Target, table: string, columns: readonly TableColumn[], rows: SqlValue[][], onRows: RowsProgress | undefined, batchRows: number) {
  let written = 0;
  await onRows?.(0);
  for (let i = 0; i < rows.length; i += batchRows) {
    written += await target.insertRows(table, columns, rows.slice(i, i + batchRows));
    await onRows?.(written);
  }
  return written;
}

function jsRows(rows: readonly Readonly<Record<string, unknown>>[], columns: readonly TableColumn[], constants: Readonly<Record<string, SqlValue>> = {}): SqlValue[][] {
  return rows.map((row) => columns.map((c) => (c.name in constants ? (constants[c.name] ?? null) : toSqlValue(row[c.name]))));
}

export function toSqlValue(value: unknown): SqlValue {
  if (value === undefined || value === null) return null;
  if (typeof value === "string" || typeof value === "number" || typeof value === "bigint" || typeof value === "boolean") return value;
  if (value instanceof Date) return value.toISOString();
  return JSON.stringify(value);
}

