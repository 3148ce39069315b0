import { execFileSync } from "node:child_process";
import { constants, createReadStream } from "node:fs";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DefinitionError } from "../core/model/errors.ts";
import { passthroughColumns, recordsWithConstants } from "./csv-passthrough.ts";
import { fileSelect, withMemoryDuckDB } from "./duckdb-read.ts";
import { columnTypeFromDuckDB, inferSchemaFromRows, normalizeSchema, type Column } from "./schema.ts";
import { describeSource, isFileSource, type FileSource, type Source } from "./source.ts";
import { ident, identList, joinSql, sql, trusted, type Sql, type SqlValue } from "./sql.ts";
import type { TableColumn, Target } from "./target.ts";

/** Rows moved per round trip when a target cannot read the source itself. */
export const DEFAULT_BATCH_ROWS = 20_000;

export type RowsProgress = (rowsSoFar: number) => void | Promise<void>;

/** The columns a source provides, with their types; used to create a table on its first load. */
export async function sourceColumns(target: Target, source: Source): Promise<Column[]> {
  let columns: Column[];
  if (isFileSource(source)) {
    if (source.columns) {
      // Declared columns are what the file is read as; no need to ask DuckDB to sniff it.
      const declared = normalizeSchema(source.columns, describeSource(source)).filter((c) => !(c.name in (source.constants ?? {})));
      return [...declared, ...Object.entries(source.constants ?? {}).map(([name, value]) => ({ name, type: constantTypeFor(source, name, value) }))];
    }
    const described = await queryFileSide(target, sql`DESCRIBE ${fileSelect(source)}`);
    return described.map((r) => ({ name: String(r.column_name), type: columnTypeFromDuckDB(String(r.column_type)) }));
  }
  if ("rows" in source) {
    columns = source.columns ? normalizeSchema(source.columns, describeSource(source)) : inferSchemaFromRows(source.rows, describeSource(source));
  } else {
    columns = await (source.from ?? target).describeQuery(source.sql);
  }
  const names = new Set(columns.map((c) => c.name));
  for (const [name, value] of Object.entries(source.constants ?? {})) {
    if (!names.has(name)) columns.push({ name, type: constantType(value) });
  }
  return columns;
}

function constantTypeFor(source: Source, name: string, value: SqlValue): Column["type"] {
  const declared = "columns" in source && source.columns ? normalizeSchema(source.columns, describeSource(source)).find((c) => c.name === name) : undefined;
  return declared?.type ?? constantType(value);
}

function constantType(value: SqlValue): Column["type"] {
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "bigint") return "bigint";
  if (typeof value === "number") return Number.isInteger(value) ? "bigint" : "double";
  if (typeof value === "string" && /^\d{4}-\d{2}-\d{2}$/.test(value)) return "date";
  return "text";
}

/**
 * Inserts every row of the source into `table` (which has `columns`), and returns how many.
 * The source must provide exactly the table's columns, by name.
 */
export async function loadSource(target: Target, table: string, columns: readonly TableColumn[], source: Source, onRows?: RowsProgress, batchRows = DEFAULT_BATCH_ROWS): Promise<number> {
  if (!Number.isInteger(batchRows) || batchRows < 1) throw new DefinitionError(`batchRows must be a whole number >= 1, not ${batchRows}`);
  const provided = await sourceColumns(target, source);
  matchColumns(table, columns, provided, source);
  if (isFileSource(source)) {
    if (target.readsFiles && target.insertFromFile) {
      await onRows?.(0);
      return target.insertFromFile(table, columns, fileSelect(source));
    }
    return moveFileRows(target, table, columns, source, provided, onRows, batchRows);
  }
  if ("rows" in source) return insertInBatches(target, table, columns, jsRows(source.rows, columns, source.constants), onRows, batchRows);
  if (source.from && source.from !== target) {
    const rows = await source.from.query(source.sql);
    return insertInBatches(target, table, columns, jsRows(rows, columns, source.constants), onRows, batchRows);
  }
  await onRows?.(0);
  const constants = source.constants ?? {};
  const exprs = columns.map((c) => target.cast(c.name in constants ? sql`${constants[c.name] ?? null}` : sql`${ident("src")}.${ident(c.name)}`, c.sqlType));
  return target.exec(sql`INSERT INTO ${ident(table)} (${identList(columns.map((c) => c.name))}) SELECT ${joinSql(exprs)} FROM (${source.sql}) AS ${ident("src")}`);
}

function matchColumns(table: string, columns: readonly TableColumn[], provided: readonly Column[], source: Source) {
  const have = new Set(provided.map((c) => c.name));
  const want = new Set(columns.map((c) => c.name));
  const missing = columns.filter((c) => !have.has(c.name)).map((c) => c.name);
  const extra = provided.filter((c) => !want.has(c.name)).map((c) => c.name);
  if (missing.length > 0) throw new DefinitionError(`${describeSource(source)} does not provide column(s) ${missing.join(", ")} of table ${table}`);
  if (extra.length > 0) throw new DefinitionError(`${describeSource(source)} has column(s) ${extra.join(", ")} that table ${table} does not`);
}

async function moveFileRows(target: Target, table: string, columns: readonly TableColumn[], source: FileSource, provided: readonly Column[], onRows: RowsProgress | undefined, batchRows: number) {
  const typeOf = new Map(provided.map((c) => [c.name, c.type]));
  // Everything travels as text; booleans as 1/0, which PostgreSQL and SQLite both read back.
  const exprs = columns.map((c) => {
    const value = sql`${ident("src")}.${ident(c.name)}`;
    return typeOf.get(c.name) === "boolean" ? sql`CAST(CAST(${value} AS INTEGER) AS VARCHAR)` : sql`CAST(${value} AS VARCHAR)`;
  });
  if (target.copyCsv && "csv" in source) {
    const order = await passthroughColumns(source, columns);
    if (order) {
      const byName = new Map(columns.map((c) => [c.name, c]));
      const constants = Object.keys(source.constants ?? {}).map((k) => source.constants![k] ?? null);
      await onRows?.(0);
      return target.copyCsv(table, order.map((n) => byName.get(n)!), recordsWithConstants(source.csv, constants, onRows));
    }
  }
  if (target.copyCsv) {
    // DuckDB's CSV writer formats each type itself; booleans come out as true/false.
    const raw = sql`SELECT ${identList(columns.map((c) => c.name))} FROM (${fileSelect(source)}) AS ${ident("src")}`;
    return copyThroughCsv(target, table, columns, raw, onRows);
  }
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

/**
 * DuckDB writes the rows as CSV (in C++, fast) and the target's bulk loader reads them. Where the
 * system has named pipes the two run at the same time through one; elsewhere through a scratch
 * file. Progress counts lines, so it is approximate when values hold newlines.
 */
async function copyThroughCsv(target: Target, table: string, columns: readonly TableColumn[], select: Sql, onRows?: RowsProgress): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "idem-copy-"));
  const path = join(dir, "rows.csv");
  const writeCsv = () => withMemoryDuckDB((duck) => duck.exec(sql`COPY (${select}) TO ${path} (FORMAT csv, HEADER false)`));
  let lines = 0;
  const copy = () =>
    target.copyCsv!(table, columns, createReadStream(path, { highWaterMark: 1 << 20 }), async (chunk) => {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      await onRows?.(lines);
    });
  try {
    await onRows?.(0);
    if (!makeFifo(path)) {
      await writeCsv();
      return await copy();
    }
    const writing = writeCsv().catch(async (error: unknown) => {
      // The reader may be waiting for a writer to open the pipe; give it one, and an end.
      await closeFifoWriter(path);
      throw error;
    });
    const [written, wrote] = await Promise.allSettled([copy(), writing]);
    if (wrote.status === "rejected") throw wrote.reason;
    if (written.status === "rejected") throw written.reason;
    return written.value;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function makeFifo(path: string): boolean {
  if (process.platform === "win32") return false;
  try {
    execFileSync("mkfifo", ["-m", "600", path], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

async function closeFifoWriter(path: string): Promise<void> {
  try {
    const handle = await open(path, constants.O_WRONLY | constants.O_NONBLOCK);
    await handle.close();
  } catch {
    // No reader is waiting: nothing to unblock.
  }
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

/** Runs a query that reads files: on the target when it can, else on an in-memory DuckDB. */
export async function queryFileSide(target: Target, statement: Sql): Promise<Record<string, unknown>[]> {
  if (target.readsFiles) return target.query(statement);
  return withMemoryDuckDB((duck) => duck.rows(statement));
}

/** The source's own row count and column sums, for checks that compare staged rows with it. */
export async function sourceTotals(target: Target, source: Source, sumColumns: readonly string[]): Promise<{ rows: number; sums: Map<string, number | null> }> {
  const sums = new Map<string, number | null>();
  if ("rows" in source) {
    for (const name of sumColumns) {
      const values = source.rows.map((r) => r[name] ?? (source.constants?.[name] as unknown)).filter((v) => v !== null && v !== undefined);
      sums.set(name, values.length ? values.reduce((a: number, v) => a + Number(v), 0) : null);
    }
    return { rows: source.rows.length, sums };
  }
  const exprs = [trusted("count(*) AS n"), ...sumColumns.map((c, i) => sql`sum(${ident("src")}.${ident(c)}) AS ${ident(`s${i}`)}`)];
  const from = isFileSource(source) ? fileSelect(source) : source.sql;
  const statement = sql`SELECT ${joinSql(exprs)} FROM (${from}) AS ${ident("src")}`;
  const rows = isFileSource(source) ? await queryFileSide(target, statement) : await (source.from ?? target).query(statement);
  const row = rows[0] ?? {};
  sumColumns.forEach((c, i) => sums.set(c, row[`s${i}`] == null ? null : Number(row[`s${i}`])));
  return { rows: Number(row.n ?? 0), sums };
}

/** A few of the source's rows that satisfy `condition` (for showing rows a write refuses). */
export async function sampleSource(target: Target, source: Source, condition: Sql, jsCondition: (row: Readonly<Record<string, unknown>>) => boolean, limit = 3): Promise<Record<string, unknown>[]> {
  if ("rows" in source) {
    return source.rows.map((r) => ({ ...r, ...source.constants })).filter(jsCondition).slice(0, limit);
  }
  const from = isFileSource(source) ? fileSelect(source) : source.sql;
  const statement = sql`SELECT * FROM (${from}) AS ${ident("src")} WHERE ${condition} LIMIT ${trusted(String(limit))}`;
  return isFileSource(source) ? queryFileSide(target, statement) : (source.from ?? target).query(statement);
}
