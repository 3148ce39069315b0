import { DataError } from "../../core/model/errors.ts";
import { checkStaged, type Check } from "../checks.ts";
import type { WriteContext } from "../context.ts";
import { loadError, loadSource } from "../sources/load-source.ts";
import { sourceColumns } from "../sources/source-columns.ts";
import { sourceSpec, type RowsProgress, type Source } from "../sources/source.ts";
import { ident, identList, sql, trusted } from "../sql.ts";
import { openDuckDB, type DuckDBTarget } from "../targets/duckdb.ts";

export type FileFormat = "parquet" | "csv" | "json";

/**
 * Stages a source in an in-memory DuckDB table, checks it, and writes it to `path` in `format`;
 * the file is then read back and counted, so a short write is caught before it is published.
 */
export async function stageToFile(options: {
  source: Source;
  path: string;
  format: FileFormat;
  checks?: readonly Check[];
  label: string;
  /** Whose write it is: named in a failure's one line. */
  context?: WriteContext;
  /** Columns left out of the file (a partition column, which the directory name carries). */
  omit?: string;
  /** Every staged row must have omit = this value. */
  omitEquals?: string;
  onRows?: RowsProgress;
  batchRows?: number;
  /** Called when the rows are staged, when they passed the checks, and when the file is written. */
  onStep?: (step: "staged" | "checked" | "written", rows: number) => Promise<void>;
}): Promise<number> {
  const source = sourceSpec(options.source, options.label);
  const duck: DuckDBTarget = await openDuckDB(":memory:");
  try {
    const columns = await sourceColumns(duck, source).catch((error: unknown) => {
      throw loadError(duck, options.label, source, error, "reading", options.context);
    });
    await duck.createTable("staged", columns);
    const tableColumns = (await duck.tableColumns("staged"))!;
    const staged = await loadSource(duck, "staged", tableColumns, source, options.onRows, options.batchRows, options.label, options.context);
    await options.onStep?.("staged", staged);
    const kept = columns.map((c) => c.name).filter((n) => n !== options.omit);
    if (options.omit && columns.some((c) => c.name === options.omit)) {
      const outside = await duck.query(sql`SELECT * FROM staged WHERE CAST(${ident(options.omit)} AS VARCHAR) IS DISTINCT FROM ${options.omitEquals ?? null} LIMIT 3`);
      if (outside.length > 0) {
        const n = Number((await duck.query(sql`SELECT count(*) AS n FROM staged WHERE CAST(${ident(options.omit)} AS VARCHAR) IS DISTINCT FROM ${options.omitEquals ?? null}`))[0]?.n);
        throw new DataError(`${options.label}: ${n} staged row(s) fall outside ${options.omit} = ${options.omitEquals}, e.g. ${outside.map((r) => JSON.stringify(r)).join(" ")}; nothing written`);
      }
    }
    await checkStaged({ target: duck, relation: sql`staged`, label: options.label, source }, options.checks ?? []);
    await options.onStep?.("checked", staged);
    const format = options.format === "parquet" ? "FORMAT parquet" : options.format === "csv" ? "FORMAT csv, HEADER true" : "FORMAT json, ARRAY true";
    await duck.exec(sql`COPY (SELECT ${identList(kept)} FROM staged) TO ${options.path} (${trusted(format)})`);
    const reader = options.format === "parquet" ? sql`read_parquet(${options.path})` : options.format === "csv" ? sql`read_csv(${options.path}, header = true)` : sql`read_json_auto(${options.path})`;
    const written = staged === 0 && options.format === "json" ? 0 : Number((await duck.query(sql`SELECT count(*) AS n FROM ${reader}`))[0]?.n);
    if (written !== staged) throw new Error(`${options.label}: wrote ${written} rows to ${options.path} but staged ${staged}`);
    await options.onStep?.("written", staged);
    return staged;
  } finally {
    await duck.close();
  }
}
