import { fileSelect, withMemoryDuckDB } from "./duckdb-read.ts";
import { isFileSpec, type SourceSpec } from "./source.ts";
import { ident, joinSql, sql, trusted, type Sql } from "../sql.ts";
import type { Target } from "../target.ts";

/** Runs a query that reads files: on the target when it can, else on an in-memory DuckDB. */
export async function queryFileSide(target: Target, statement: Sql): Promise<Record<string, unknown>[]> {
  if (target.readsFiles) return target.query(statement);
  return withMemoryDuckDB((duck) => duck.rows(statement));
}

/** The source's own row count and column sums, for checks that compare staged rows with it. */
export async function sourceTotals(target: Target, source: SourceSpec, sumColumns: readonly string[]): Promise<{ rows: number; sums: Map<string, number | null> }> {
  const sums = new Map<string, number | null>();
  if (source.kind === "rows") {
    for (const name of sumColumns) {
      const values = source.rows.map((r) => r[name] ?? (source.constants[name] as unknown)).filter((v) => v !== null && v !== undefined);
      sums.set(name, values.length ? values.reduce((a: number, v) => a + Number(v), 0) : null);
    }
    return { rows: source.rows.length, sums };
  }
  const exprs = [trusted("count(*) AS n"), ...sumColumns.map((c, i) => sql`sum(${ident("src")}.${ident(c)}) AS ${ident(`s${i}`)}`)];
  const row = (await querySource(target, source, (from) => sql`SELECT ${joinSql(exprs)} FROM (${from}) AS ${ident("src")}`))[0] ?? {};
  sumColumns.forEach((c, i) => sums.set(c, row[`s${i}`] == null ? null : Number(row[`s${i}`])));
  return { rows: Number(row.n ?? 0), sums };
}

/** A few of the source's rows that satisfy `condition` (for showing rows a write refuses). */
export async function sampleSource(target: Target, source: SourceSpec, condition: Sql, jsCondition: (row: Readonly<Record<string, unknown>>) => boolean, limit = 3): Promise<Record<string, unknown>[]> {
  if (source.kind === "rows") {
    return source.rows.map((r) => ({ ...r, ...source.constants })).filter(jsCondition).slice(0, limit);
  }
  return querySource(target, source, (from) => sql`SELECT * FROM (${from}) AS ${ident("src")} WHERE ${condition} LIMIT ${trusted(String(limit))}`);
}

/** A statement over a file or query source, run where that source can be read. */
function querySource(target: Target, source: Exclude<SourceSpec, { kind: "rows" }>, statement: (from: Sql) => Sql): Promise<Record<string, unknown>[]> {
  if (isFileSpec(source)) return queryFileSide(target, statement(fileSelect(source)));
  return (source.from ?? target).query(statement(source.sql));
}
