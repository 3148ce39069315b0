import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeProject, removeProject, repo } from "../support/processes.ts";

const SECRET = "hunter2-not-for-logs";
const pgUrl = process.env.IDEM_TEST_PG_URL;
let project: string;

function idem(dir: string, ...args: string[]) {
  const env = { ...process.env, IDEM_USER: "tester", DB_PASSWORD: SECRET, LITE_DB: join(dir, ".idem/lite.db"), PG_URL: pgUrl ?? "" };
  const result = spawnSync(process.execPath, [join(repo, "bin/idem.js"), ...args], { cwd: dir, encoding: "utf8", env, timeout: 90_000 });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

const CONFIG = `import type { IdemConfig } from "idem";
export default {
  connections: {
    warehouse: { duckdb: ".idem/warehouse.duckdb" },
    lite: { sqlite: "$LITE_DB" },
    remote: { postgres: "postgres://etl@127.0.0.1:1/nowhere", password: "$DB_PASSWORD" },
    ${pgUrl ? `pg: { postgres: "$PG_URL" },` : ""}
  },
} satisfies IdemConfig;
`;

const ORDERS = `
import { pipeline, manual, DataError, type TaskContext } from "idem";
import { sql } from "idem/data";

export async function compare(ctx: TaskContext<{}, { load: { rowsAffected: number } }>) {
  const warehouse = await ctx.connection("warehouse");
  const [row] = await warehouse.query(sql\`SELECT count(*)::INTEGER AS n FROM orders WHERE day = CAST(\${ctx.businessDate} AS DATE)\`);
  const reported = ctx.upstream.load?.rowsAffected;
  if (reported === undefined) throw new DataError("load reported nothing");
  return { inTable: Number(row!.n), loadReported: reported };
}

export const orders = pipeline("orders", { schedule: manual(), start: "2026-09-01", defaults: { retries: 2, retryDelay: 100 } }, {
  setup: { sql: "CREATE TABLE IF NOT EXISTS orders (day DATE, id INTEGER, amount INTEGER)", connection: "warehouse" },
  load: { after: ["setup"], sql: { file: "sql/load_day.sql" }, connection: "warehouse" },
  no_refunds: { after: ["load"], check: true, connection: "warehouse", sql: "SELECT id, amount FROM orders WHERE day = CAST($business_date AS DATE) AND amount < 0" },
  compare: { after: ["load"], run: compare },
  lite: { sql: "CREATE TABLE IF NOT EXISTS days (day TEXT PRIMARY KEY); INSERT OR REPLACE INTO days VALUES ($business_date)", connection: "lite" },
  ${pgUrl ? `remote_day: { sql: "CREATE TABLE IF NOT EXISTS idem_sql_task_days (day date PRIMARY KEY, run text); INSERT INTO idem_sql_task_days VALUES ($business_date, $run_id) ON CONFLICT (day) DO UPDATE SET run = excluded.run", connection: "pg" },` : ""}
});

export const refunds = pipeline("refunds", { schedule: manual(), start: "2026-09-01", defaults: { retries: 2, retryDelay: 100 } }, {
  check: { check: true, connection: "warehouse", sql: "SELECT -5 AS amount, $business_date AS day" },
});

export const broken = pipeline("broken", { schedule: manual(), start: "2026-09-01" }, {
  typo: { sql: { file: "sql/typo.sql" }, connection: "warehouse" },
  inline: { sql: "SELECT 1;\\nSELECT nope FROM nowhere", connection: "warehouse" },
});

export const leaky = pipeline("leaky", { schedule: manual(), start: "2026-09-01" }, {
  talk: { run: (ctx) => { ctx.log.info("connecting with " + process.env.DB_PASSWORD); throw new Error("could not log in as etl:" + process.env.DB_PASSWORD); } },
  remote: { sql: "SELECT 1", connection: "remote", retries: 0 },
});
`;

beforeAll(() => {
  project = makeProject({
    "idem.config.ts": CONFIG,
    "pipelines/orders.ts": ORDERS,
    "sql/load_day.sql": `-- the day's orders, replaced whole
DELETE FROM orders WHERE day = CAST($business_date AS DATE);
INSERT INTO orders SELECT CAST($business_date AS DATE), i, i * 10 FROM range(3) t(i);
`,
    "sql/typo.sql": "SELECT 1;\n\nSELEC broken FROM nowhere;\n",
  });
});
afterAll(() => removeProject(project));

describe("SQL tasks on named connections", () => {
  it("binds the business date, reports rows affected, and a check compares with the load's summary", () => {
    const first = idem(project, "run", "orders", "--date", "2026-09-01");
    expect(first.err).toBe("");
    expect(first.code).toBe(0);
    const summaries = () =>
      Object.fromEntries((JSON.parse(idem(project, "tasks", "orders@2026-09-01", "--json").out) as { taskId: string; lastAttempt: { summary: unknown } }[]).map((t) => [t.taskId, t.lastAttempt.summary]));
    expect(summaries()).toMatchObject({ load: { rowsAffected: 3, statements: 2 }, no_refunds: { offendingRows: 0 }, compare: { inTable: 3, loadReported: 3 }, lite: { rowsAffected: 1 } });
    // a rerun replaces the day: 3 deleted + 3 inserted, still 3 in the table
    expect(idem(project, "run", "orders", "--date", "2026-09-01").code).toBe(0);
    expect(summaries()).toMatchObject({ load: { rowsAffected: 6 }, compare: { inTable: 3, loadReported: 6 } });
    if (pgUrl) expect(summaries()).toMatchObject({ remote_day: { rowsAffected: 1, statements: 2 } });
  });

  it("a check query that finds rows is a data error: the run fails and the task is not retried", () => {
    const { code, out } = idem(project, "run", "refunds", "--date", "2026-09-02");
    expect(code).toBe(1);
    expect(out).toMatch(/check\s+try 1\s+failed\s+task check: check found 1 offending row\(s\), first \{"amount":-5,"day":"2026-09-02"\}/);
    expect(out).not.toMatch(/try 2/);
  });

  it("a failing statement gives the database's message with the file and line", () => {
    const { code, out } = idem(project, "run", "broken", "--date", "2026-09-01");
    expect(code).toBe(1);
    expect(out).toMatch(/typo\s+try 1\s+failed\s+sql\/typo\.sql:3, task typo: (Failed to extract statements: )?Parser Error: syntax error at or near "SELEC"/);
    expect(out).toMatch(/inline\s+try 1\s+failed\s+task inline, line 2 of its sql: Catalog Error: Table with name nowhere does not exist/);
  });

  it("masks connection secrets in what idem prints and records", () => {
    const ran = idem(project, "run", "leaky", "--date", "2026-09-01");
    expect(ran.code).toBe(1);
    expect(ran.out).toMatch(/talk\s+try 1\s+failed\s+could not log in as etl:\*\*\*/);
    expect(ran.out + ran.err).not.toContain(SECRET);
    expect(idem(project, "logs", "leaky@2026-09-01", "talk").out).toMatch(/connecting with \*\*\*/);
    expect(idem(project, "tasks", "leaky@2026-09-01").out).not.toContain(SECRET);
    const logs = join(project, ".idem/logs");
    const files = readdirSync(logs, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) expect(readFileSync(file, "utf8")).not.toContain(SECRET);
  });
});

describe("SQL tasks: bad input", () => {
  it("a SQL task whose connection is unknown is refused when the project loads", () => {
    const other = makeProject({
      "idem.config.ts": `export default { connections: { warehouse: { duckdb: ":memory:" } } };\n`,
      "pipelines/p.ts": `import { pipeline, manual } from "idem";\nexport const p = pipeline("p", { schedule: manual() }, { load: { sql: "SELECT 1", connection: "warehose" } });\n`,
    });
    try {
      const { code, err } = idem(other, "validate");
      expect(code).toBe(2);
      expect(err).toBe(`idem: pipelines/p.ts:2: pipeline p, task load: unknown connection "warehose" (connections: warehouse) (did you mean "warehouse"?)\n`);
    } finally {
      removeProject(other);
    }
  });
});
