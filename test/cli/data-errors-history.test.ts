import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { makeProject, removeProject, repo } from "../support/processes.ts";

let project: string;

function idem(...args: string[]) {
  const result = spawnSync(process.execPath, [join(repo, "bin/idem.js"), ...args], { cwd: project, encoding: "utf8", env: { ...process.env, IDEM_USER: "tester" }, timeout: 120_000 });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

beforeAll(() => {
  project = makeProject({
    "idem.config.ts": `import type { IdemConfig } from "idem";\nexport default {} satisfies IdemConfig;\n`,
    "landing/bad.parquet": "this is not a parquet file\n",
    "landing/bad.json": `[{"id": 1, "amount": 2}, {"id": 2, "amount": `,
    "pipelines/lake.ts": `
import { pipeline, manual } from "idem";
import { openDuckDB, replaceWhere, sql, swapPartition, writeContextFrom } from "idem/data";

export const lake = pipeline("lake", { schedule: manual(), start: "2026-09-01" }, {
  publish: { run: async (ctx) => {
    const summary = await swapPartition({ root: "lake/orders", column: "day", value: ctx.businessDate, context: writeContextFrom(ctx),
      source: { rows: [{ id: 1, amount: 10 }, { id: 2, amount: 20 }] } });
    return { rows: summary.rowsWritten };
  } },
});

async function intoWarehouse(ctx: Parameters<typeof writeContextFrom>[0] & { businessDate: string }, source: Parameters<typeof replaceWhere>[0]["source"]) {
  const target = await openDuckDB("warehouse-" + ctx.taskId + ".duckdb");
  try {
    await replaceWhere({ target, table: "orders", source, context: writeContextFrom(ctx), where: { column: "day", equals: ctx.businessDate } });
  } finally {
    await target.close();
  }
}

export const broken = pipeline("broken", { schedule: manual(), start: "2026-09-01", defaults: { retries: 0 } }, {
  bad_parquet: { run: async (ctx) => void (await swapPartition({ root: "lake/broken", column: "day", value: ctx.businessDate, context: writeContextFrom(ctx),
    source: { parquet: "landing/bad.parquet" } })) },
  bad_json: { run: (ctx) => intoWarehouse(ctx, { json: "landing/bad.json", constants: { day: ctx.businessDate } }) },
  bad_sql: { run: (ctx) => intoWarehouse(ctx, { sql: sql\`SELEC id, \${ctx.businessDate} AS day FROM nowhere\` }) },
});
`,
  });
});
afterAll(() => removeProject(project));

describe("idem history <dataset>", () => {
  it("shows a file dataset's publishes from its history.jsonl, newest first, with no warehouse configured", () => {
    const first = idem("run", "lake", "--date", "2026-09-01");
    expect(first.err + first.out).toMatch(/run lake@2026-09-01 success/);
    expect(idem("run", "lake", "--date", "2026-09-02").code).toBe(0);
    expect(idem("run", "lake", "--date", "2026-09-01").code).toBe(0);
    const { code, out, err } = idem("history", "lake/orders");
    expect(err).toBe("");
    expect(code).toBe(0);
    const lines = out.trim().split("\n");
    expect(lines[0]).toMatch(/^id\s+written at\s+operation\s+partition\s+written\s+run\s+task\s+try\s+version/);
    expect(lines.slice(1).map((l) => l.split(/\s{2,}/).slice(2, 7))).toEqual([
      ["swapPartition", "day=2026-09-01", "2", "lake@2026-09-01", "publish"],
      ["swapPartition", "day=2026-09-02", "2", "lake@2026-09-02", "publish"],
      ["swapPartition", "day=2026-09-01", "2", "lake@2026-09-01", "publish"],
    ]);
    const json = JSON.parse(idem("history", "lake/orders", "--json", "--limit", "2").out) as { id: number; partition: string; businessDate: string; previousVersion: string | null }[];
    expect(json.map((e) => [e.id, e.partition, e.businessDate])).toEqual([[3, "day=2026-09-01", "2026-09-01"], [2, "day=2026-09-02", "2026-09-02"]]);
    expect(json[0]!.previousVersion).toMatch(/day=2026-09-01/);
    // a name that is neither a file dataset nor a table in a configured warehouse
    expect(idem("history", "lake/nothing").err).toMatch(/^idem: which warehouse holds lake\/nothing\? .*there is no lake\/\.nothing\.idem\/history\.jsonl\)\n$/);
  });
});

describe("a DuckDB error inside a source or a loader", () => {
  it("is one line naming the pipeline, the task, the business date and the partition or file", () => {
    const run = idem("run", "broken", "--date", "2026-09-01");
    expect(run.code).toBe(1);
    const attempts = (task: string) => JSON.parse(idem("attempts", "broken@2026-09-01", task, "--json").out) as { errorMessage: string | null }[];
    const message = (task: string) => attempts(task)[0]!.errorMessage!;
    expect(message("bad_parquet")).toMatch(/^pipeline broken, task bad_parquet, business date 2026-09-01: lake\/broken\/day=2026-09-01: reading parquet landing\/bad\.parquet failed: [^\n]+$/);
    expect(message("bad_json")).toMatch(/^pipeline broken, task bad_json, business date 2026-09-01: orders: (reading|loading) json landing\/bad\.json failed: [^\n]+$/);
    expect(message("bad_sql")).toMatch(/^pipeline broken, task bad_sql, business date 2026-09-01: orders: (reading|loading) a query failed: [^\n]*Parser Error: [^\n]+$/);
    for (const task of ["bad_parquet", "bad_json", "bad_sql"]) expect(run.out).toContain(message(task));
  });
});
