import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { daily, pipeline, type TaskContext } from "idem";
import { ident, openDuckDB, replaceKey, sql, writeContextFrom, type Target } from "idem/data";

const exampleDir = fileURLToPath(new URL("..", import.meta.url));

export interface LandedParams extends Record<string, unknown> {
  /** One directory per business date, holding the files that landed that day. */
  landing: string;
  warehouse: string;
}

/** landed_orders: one row per order, owned by (the day it landed, the file it came in). */
const TABLE = "landed_orders";
const COLUMNS = { order_id: "bigint", amount: "decimal(12,2)", landed_on: "date", file: "text" } as const;

function dayDir(ctx: TaskContext<LandedParams>): string {
  return join(ctx.params.landing, ctx.businessDate);
}

async function withWarehouse<T>(path: string, fn: (target: Target) => Promise<T>): Promise<T> {
  // DuckDB allows one writer process, so the warehouse is open only for the length of a task.
  const target = await openDuckDB(path);
  try {
    return await fn(target);
  } finally {
    await target.close();
  }
}

/** The files that landed for D, in name order; each becomes one mapped instance keyed by its name. */
export async function listFiles(ctx: TaskContext<LandedParams>) {
  const names = await readdir(dayDir(ctx));
  return { files: names.filter((n) => n.endsWith(".csv")).sort() };
}

/** Replaces the rows of one file of D (and only those): a rerun of the key replaces the same rows. */
export async function loadFile(ctx: TaskContext<LandedParams>) {
  const file = ctx.mapKey!;
  return withWarehouse(ctx.params.warehouse, async (target) => {
    const result = await replaceKey({
      target,
      table: TABLE,
      columns: COLUMNS,
      keyColumn: "file",
      // a file name may land again another day: the key owns its rows within D only
      scope: { column: "landed_on", equals: ctx.businessDate },
      source: { csv: join(dayDir(ctx), file), columns: { order_id: "bigint", amount: "decimal(12,2)" }, constants: { landed_on: ctx.businessDate } },
      checks: [{ uniqueKey: "order_id" }, { nonNegative: "amount" }, { rowCountEqualsSource: true }],
      context: writeContextFrom(ctx),
      frozen: ctx.frozen,
    });
    ctx.log.info(`loaded ${result.rowsWritten} orders from ${file}`, { replaced: result.rowsDeleted });
    return { rows: result.rowsWritten, replaced: result.rowsDeleted };
  });
}

/** Reduces the instances' summaries, a page at a time, and checks them against D's rows in the table. */
export async function report(ctx: TaskContext<LandedParams>) {
  let rows = 0;
  for (let after: string | undefined; ; ) {
    const page = await ctx.mapped("load_file", { after, limit: 1000 });
    for (const i of page.instances) rows += (i.summary as { rows?: number } | null)?.rows ?? 0;
    if (page.next === null) break;
    after = page.next;
  }
  const inTable = await withWarehouse(ctx.params.warehouse, async (target) =>
    Number((await target.query(sql`SELECT count(*) AS n FROM ${ident(TABLE)} WHERE landed_on = ${ctx.businessDate}`))[0]?.n ?? 0));
  if (inTable !== rows) throw new Error(`${ctx.businessDate}: ${inTable} rows in ${TABLE} for the files' ${rows}`);
  return { files: (ctx.upstream.load_file as { items: number }).items, rows };
}

/** The pipeline; tests build it over their own landing folder and warehouse. */
export function landedFilesPipeline(params: LandedParams) {
  return pipeline(
    "landed_files",
    {
      description: "Every file that landed for D, each loaded as the rows of its name.",
      schedule: daily({ at: "02:00", timezone: "UTC" }),
      defaults: { retries: 2, retryDelay: "10s", timeout: "10m" },
      params,
    },
    {
      list_files: { run: listFiles, description: "the files that landed for D" },
      load_file: {
        after: ["list_files"],
        map: { items: { task: "list_files", field: "files" }, maxActive: 8 },
        run: loadFile,
        pool: "warehouse",
        description: "replace one file's rows of D in landed_orders",
      },
      report: { after: ["load_file"], run: report, pool: "warehouse", description: "rows per file add up to D's rows" },
    },
  );
}

export const landedFiles = landedFilesPipeline({
  landing: join(exampleDir, "landing"),
  warehouse: join(exampleDir, ".idem", "warehouse.duckdb"),
});
