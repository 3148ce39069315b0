/**
 * The proof across machines: three hosts on one machine, built from network namespaces
 * (netns-support.ts). PostgreSQL runs on host "db", a worker on each of h1 and h2, the scheduler
 * on h1. A 30-day daily pipeline loads each day into a table on db with a replace-where; h2's
 * worker is killed with -9 in the middle. Where namespaces cannot be made, the same scenario runs
 * with processes on loopback against the test server, and the test says so.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeProject, removeProject, waitFor, type Daemon } from "../support/processes.ts";
import { openCluster, type Cluster } from "./netns-support.ts";
import { dropSchema, freshSchema, schemaUrl, testPostgresUrl } from "./postgres-support.ts";

const DAYS = 30;
const testUrl = testPostgresUrl();

/** The day's rows: the same for a given day whoever computes them, however often. */
const LOADER = `
export const TABLE_SQL = "CREATE TABLE IF NOT EXISTS sales_daily (day date NOT NULL, store int NOT NULL, amount numeric(12,2) NOT NULL)";
export async function replaceDay(client, table, day) {
  await client.query("BEGIN");
  await client.query("DELETE FROM " + table + " WHERE day = $1", [day]);
  await client.query(
    "INSERT INTO " + table + " (day, store, amount) " +
    "SELECT $1::date, s, round(((hashtext($1 || ':' || s) & 65535) / 100.0)::numeric, 2) FROM generate_series(1, 5) AS s",
    [day],
  );
  await client.query("COMMIT");
}
`;

let cluster: Cluster | null = null;
let project: string | null = null;
let stateSchema: string | null = null;
const procs: Daemon[] = [];

describe.skipIf(!testUrl)("the proof across machines", () => {
  beforeAll(() => {
    cluster = openCluster(testUrl!, "netns cluster");
  }, 90_000);

  afterAll(async () => {
    await Promise.all(procs.splice(0).map((p) => p.stop()));
    if (project) removeProject(project);
    if (cluster?.mode === "loopback" && stateSchema) await dropSchema(testUrl!, stateSchema).catch(() => {});
    cluster?.tearDown();
  }, 60_000);

  it(`runs a ${DAYS}-day catch-up on two hosts; the killed host's attempts are retried on the other and the table equals a clean run`, async () => {
    const c = cluster!;
    stateSchema = freshSchema();
    const stateUrl = schemaUrl(c.url, stateSchema);
    const target = new pg.Client({ connectionString: c.url });
    await target.connect();
    try {
      await target.query(`CREATE SCHEMA "${stateSchema}_data"`);
      await target.query(`SET search_path TO "${stateSchema}_data"`);
      const loader = await import(`data:text/javascript,${encodeURIComponent(LOADER)}`);
      await target.query(loader.TABLE_SQL);
      await target.query("CREATE TABLE sales_clean (LIKE sales_daily)");

      project = makeProject({
        "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ state: ${JSON.stringify(stateUrl)}, workerLeaseMs: 1500, schedulerLeaseMs: 1500, concurrency: 3 });
`,
        "lib/loader.mjs": LOADER,
        "pipelines/sales.ts": `
import pg from "pg";
import { pipeline, daily } from "idem";
import { replaceDay } from "../lib/loader.mjs";
const url = ${JSON.stringify(c.url)};
export const sales = pipeline("sales", { schedule: daily({ at: "00:00" }), start: "2026-07-01", end: "2026-07-${DAYS}", maxActiveRuns: 6 }, {
  load: {
    retries: 3, retryDelay: 0,
    run: async (ctx) => {
      const client = new pg.Client({ connectionString: url, options: "-c search_path=${stateSchema}_data" });
      await client.connect();
      try {
        await replaceDay(client, "sales_daily", ctx.businessDate);
      } finally {
        await client.end();
      }
      // After the write: a kill now leaves a day written by an attempt that never reported.
      await new Promise((r) => setTimeout(r, 300));
    },
  },
});
`,
      });
      const q = async <T = Record<string, any>>(sql: string, params: unknown[] = []): Promise<T[]> => {
        const client = new pg.Client({ connectionString: c.url, options: `-c search_path=${stateSchema}` });
        await client.connect();
        try {
          return (await client.query(sql, params)).rows as T[];
        } catch (error) {
          if ((error as { code?: string }).code === "42P01") return [];
          throw error;
        } finally {
          await client.end();
        }
      };
      const succeeded = async () => (await q<{ n: number }>("SELECT count(*)::int AS n FROM runs WHERE state = 'success'"))[0]?.n ?? 0;

      const survivor = c.start("h1", project, "worker");
      const doomed = c.start("h2", project, "worker");
      procs.push(survivor, doomed);
      await waitFor("both workers to register", async () => (await q("SELECT 1 FROM workers")).length === 2 || undefined, 30_000);
      procs.push(c.start("h1", project, "scheduler"));
      await waitFor("the h2 worker to be in the middle of a day, with days done", async () =>
        ((await succeeded()) >= 6 && (await q("SELECT 1 FROM attempts WHERE state = 'running' AND pid = $1", [doomed.child.pid])).length > 0) || undefined, 60_000);
      const doomedPid = doomed.child.pid;
      await doomed.kill9();
      await waitFor(`all ${DAYS} days to succeed`, async () => (await succeeded()) === DAYS || undefined, 90_000);

      const perDay = await q<{ business_date: string; n: number }>("SELECT business_date, count(*)::int AS n FROM runs GROUP BY business_date");
      expect(perDay).toHaveLength(DAYS);
      expect(perDay.filter((d) => d.n !== 1)).toEqual([]);
      const lost = await q<{ run_id: string; task_id: string; try_number: number }>(
        "SELECT run_id, task_id, try_number FROM attempts WHERE state = 'lost' AND pid = $1", [doomedPid]);
      expect(lost.length).toBeGreaterThan(0);
      for (const a of lost) {
        const after = await q<{ pid: number; try_number: number }>(
          "SELECT pid, try_number FROM attempts WHERE run_id = $1 AND task_id = $2 AND state = 'success'", [a.run_id, a.task_id]);
        expect(after).toEqual([{ pid: survivor.child.pid, try_number: a.try_number + 1 }]);
      }
      expect(await q("SELECT 1 FROM attempts WHERE state = 'success' GROUP BY run_id, task_id HAVING count(*) > 1")).toEqual([]);

      for (let d = 1; d <= DAYS; d++) await loader.replaceDay(target, "sales_clean", `2026-07-${String(d).padStart(2, "0")}`);
      const difference = await target.query(
        "(SELECT * FROM sales_daily EXCEPT ALL SELECT * FROM sales_clean) UNION ALL (SELECT * FROM sales_clean EXCEPT ALL SELECT * FROM sales_daily)");
      expect(difference.rows).toEqual([]);
      expect((await target.query("SELECT count(*)::int AS n FROM sales_daily")).rows[0].n).toBe(DAYS * 5);
      console.info(`netns cluster (${c.mode}): ${lost.length} attempt(s) of the killed worker retried on the other host`);
    } finally {
      await target.query(`DROP SCHEMA IF EXISTS "${stateSchema}_data" CASCADE`).catch(() => {});
      await target.end();
    }
  }, 180_000);
});
