import { readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { makeProject, queryState, removeProject, startIdem, waitFor, type Daemon } from "../support/processes.ts";
import { dropSchema, freshSchema, queryPg, schemaUrl, testPostgresUrl, withAdmin } from "./postgres-support.ts";

/**
 * Mapped tasks under kill -9, on both stores: a worker killed while its finish transaction is
 * writing a 20,000-item expansion (chunks of 5,000 a statement) leaves none of the instances or
 * all of them, and a worker killed again and again during a mapped run loses no key and records
 * no key's success twice. The kill lands inside the expansion for sure: the test slows (SQLite)
 * or blocks (PostgreSQL) the transaction with a trigger of its own on the instances' inserts,
 * and kills the worker while it is stuck there.
 */

const url = testPostgresUrl();
const LEASE = `workerLeaseMs: 1500, schedulerLeaseMs: 1500`;

let project: string | null = null;
let schema: string | null = null;
const daemons: Daemon[] = [];
const clients: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
  await Promise.all(clients.splice(0).map((c) => c.end().catch(() => {})));
  if (project) removeProject(project);
  if (schema) await dropSchema(url!, schema);
  project = schema = null;
});

function start(...args: string[]): Daemon {
  const daemon = startIdem(project!, ...args);
  daemons.push(daemon);
  return daemon;
}

/** One store under test: the config's state line and an auditor's read of its rows. */
interface StateUnderTest {
  stateLine: string;
  rows<T = Record<string, unknown>>(sql: string): Promise<T[]>;
}

function sqliteState(): StateUnderTest {
  return { stateLine: "", rows: async <T>(sql: string) => queryState<T>(project!, sql) };
}

function postgresState(): StateUnderTest {
  schema = freshSchema();
  const own = schema;
  return { stateLine: `state: ${JSON.stringify(schemaUrl(url!, own))},`, rows: <T>(sql: string) => queryPg<T>(url!, own, sql) };
}

const count = async (state: StateUnderTest, sql: string) => Number((await state.rows<{ n: number | string }>(sql))[0]?.n ?? 0);

const KEYS = 20_000;
const key = (i: number) => "k" + String(i).padStart(5, "0");

function expansionProject(state: StateUnderTest): string {
  return makeProject({
    "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ ${state.stateLine} ${LEASE}, concurrency: 16 });
`,
    "pipelines/fan.ts": `
import { appendFileSync } from "node:fs";
import { pipeline, daily } from "idem";
const here = new URL("..", import.meta.url).pathname;
export const fan = pipeline("fan", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-01" }, {
  work: {
    retries: 4, retryDelay: 0,
    // a function of the context: an upstream's summary is capped at 64 KiB, too small for 20,000 keys
    map: { items: () => Array.from({ length: ${KEYS} }, (_, i) => "k" + String(i).padStart(5, "0")) },
    run: (ctx) => { appendFileSync(here + "ran", ctx.mapKey + " " + ctx.tryNumber + "\\n"); },
  },
});
`,
  });
}

/** What a kill during the expansion may leave: no instance, or every key once; never a part. */
async function expectNoneOrAll(state: StateUnderTest): Promise<number> {
  const instances = await count(state, "SELECT count(*) AS n FROM task_instances WHERE map_task = 'work'");
  const distinct = await count(state, "SELECT count(DISTINCT map_key) AS n FROM task_instances WHERE map_task = 'work'");
  expect([0, KEYS]).toContain(instances);
  expect(distinct).toBe(instances);
  return instances;
}

/** After the kills: the run completes, each key has one instance that succeeded once and ran once. */
async function expectEveryKeyOnce(state: StateUnderTest): Promise<void> {
  await waitFor("the run to succeed", async () => {
    const [run] = await state.rows<{ state: string }>("SELECT state FROM runs");
    if (run?.state === "failed") throw new Error("the run failed");
    return run?.state === "success" ? true : undefined;
  }, 180_000);
  const byState = await state.rows<{ state: string; n: number | string }>(
    "SELECT state, count(*) AS n FROM task_instances WHERE map_task = 'work' GROUP BY state",
  );
  expect(byState.map((r) => [r.state, Number(r.n)])).toEqual([["success", KEYS]]);
  expect(await count(state, "SELECT count(DISTINCT map_key) AS n FROM task_instances WHERE map_task = 'work'")).toBe(KEYS);
  expect(await count(state, "SELECT count(*) AS n FROM attempts WHERE task_id LIKE 'work[%' AND state = 'success'")).toBe(KEYS);
  expect(await state.rows("SELECT task_id FROM attempts WHERE task_id LIKE 'work[%' GROUP BY task_id HAVING count(*) > 1")).toEqual([]);
  const ran = readFileSync(join(project!, "ran"), "utf8").trimEnd().split("\n");
  expect(ran).toHaveLength(KEYS);
  expect(new Set(ran.map((l) => l.split(" ")[0])).size).toBe(KEYS);
  expect(ran).toContain(`${key(KEYS - 1)} 1`);
  // the mapped task's own step was tried again after each kill, and succeeded once
  const steps = await state.rows<{ state: string }>("SELECT state FROM attempts WHERE task_id = 'work' ORDER BY try_number");
  expect(steps.at(-1)!.state).toBe("success");
  expect(steps.filter((s) => s.state === "success")).toHaveLength(1);
}

/** 300 keys, each loaded by replaceKey as one row of a SQLite table in the project, tagged with its try. */
const LOADED = 300;

function mappedRunProject(state: StateUnderTest): string {
  return makeProject({
    "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ ${state.stateLine} ${LEASE}, concurrency: 8 });
`,
    "pipelines/keyed.ts": `
import { appendFileSync } from "node:fs";
import { pipeline, daily } from "idem";
import { openSQLite, replaceKey, writeContextFrom } from "idem/data";
const here = new URL("..", import.meta.url).pathname;
export const keyed = pipeline("keyed", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-01" }, {
  list: { run: () => ({ keys: Array.from({ length: ${LOADED} }, (_, i) => "k" + String(i).padStart(3, "0")) }) },
  load: {
    after: ["list"], retries: 20, retryDelay: 0,
    map: { items: { task: "list", field: "keys" } },
    run: async (ctx) => {
      appendFileSync(here + "started", ctx.mapKey + " " + ctx.tryNumber + "\\n");
      await new Promise((r) => setTimeout(r, 40));
      const target = await openSQLite(here + "warehouse.db");
      try {
        const written = await replaceKey({
          target, table: "loaded", keyColumn: "key", columns: { try_number: "integer" },
          source: { rows: [{ try_number: ctx.tryNumber }] }, context: writeContextFrom(ctx),
        });
        return { rows: written.rowsWritten };
      } finally {
        await target.close();
      }
    },
  },
});
`,
  });
}

async function killDuringMappedRun(state: StateUnderTest): Promise<void> {
  start("scheduler");
  let worker = start("worker");
  const succeeded = () => count(state, "SELECT count(*) AS n FROM task_instances WHERE map_task = 'load' AND state = 'success'");
  for (const share of [0.2, 0.45, 0.7]) {
    await waitFor(`${share * 100}% of the keys to succeed`, async () => ((await succeeded()) >= LOADED * share ? true : undefined), 90_000);
    await worker.kill9();
    worker = start("worker");
  }
  await waitFor("the run to succeed", async () => {
    const [run] = await state.rows<{ state: string }>("SELECT state FROM runs");
    if (run?.state === "failed") throw new Error("the run failed");
    return run?.state === "success" ? true : undefined;
  }, 120_000);

  // the store: every key succeeded, once; the counts per state agree with the instances
  const byState = await state.rows<{ state: string; n: number | string }>("SELECT state, count(*) AS n FROM task_instances WHERE map_task = 'load' GROUP BY state");
  expect(byState.map((r) => [r.state, Number(r.n)])).toEqual([["success", LOADED]]);
  const [mapped] = await state.rows<{ state: string; map_total: number; map_live: number; map_failing: number }>(
    "SELECT state, map_total, map_live, map_failing FROM task_instances WHERE task_id = 'load'",
  );
  expect({ ...mapped, map_total: Number(mapped!.map_total), map_live: Number(mapped!.map_live), map_failing: Number(mapped!.map_failing) })
    .toEqual({ state: "success", map_total: LOADED, map_live: 0, map_failing: 0 });
  const successes = await state.rows<{ task_id: string; try_number: number }>(
    "SELECT task_id, try_number FROM attempts WHERE task_id LIKE 'load[%' AND state = 'success'",
  );
  expect(successes).toHaveLength(LOADED);
  expect(new Set(successes.map((s) => s.task_id)).size).toBe(LOADED);
  const lost = await state.rows<{ task_id: string; try_number: number }>("SELECT task_id, try_number FROM attempts WHERE task_id LIKE 'load[%' AND state = 'lost'");
  expect(lost.length).toBeGreaterThan(0); // the kills took attempts with them
  const successTry = new Map(successes.map((s) => [s.task_id.slice("load[".length, -1), Number(s.try_number)]));
  for (const l of lost) expect(successTry.get(l.task_id.slice("load[".length, -1))).toBeGreaterThan(Number(l.try_number));

  // the data: one row per key, written by the try that succeeded (a lost try's write was replaced)
  const db = new Database(join(project!, "warehouse.db"), { readonly: true });
  try {
    const rows = db.prepare("SELECT key, try_number FROM loaded ORDER BY key").all() as { key: string; try_number: number }[];
    expect(rows).toHaveLength(LOADED);
    expect(new Set(rows.map((r) => r.key)).size).toBe(LOADED);
    for (const r of rows) expect(r.try_number).toBe(successTry.get(r.key));
  } finally {
    db.close();
  }
  // each try ran once: a try number is one attempt, never two
  const started = readFileSync(join(project!, "started"), "utf8").trimEnd().split("\n");
  expect(new Set(started).size).toBe(started.length);
  for (const [k, t] of successTry) expect(started).toContain(`${k} ${t}`);
}

describe("mapped tasks under kill -9 (SQLite, real processes)", () => {
  it("a worker killed while writing a 20,000-item expansion leaves none of it; the retry expands all, each key once", async () => {
    const state = sqliteState();
    project = expansionProject(state);
    start("scheduler");
    await waitFor("the run", () => (queryState(project!, "SELECT 1 FROM runs").length > 0 ? true : undefined));
    // Each instance's insert does some pointless work, so the expansion's transaction lasts seconds.
    const writer = new Database(join(project, ".idem", "state.db"));
    writer.pragma("busy_timeout = 5000");
    writer.exec(`CREATE TRIGGER test_slow_expansion AFTER INSERT ON task_instances WHEN NEW.map_key IS NOT NULL BEGIN
      SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000) SELECT x FROM c);
    END`);
    writer.close();
    // A probe that never waits: it finds the write lock held, or takes and drops it at once.
    const probe = new Database(join(project, ".idem", "state.db"), { timeout: 0 });
    const writeLockHeld = () => {
      try {
        probe.exec("BEGIN IMMEDIATE");
        probe.exec("ROLLBACK");
        return false;
      } catch (error) {
        if ((error as { code?: string }).code === "SQLITE_BUSY") return true;
        throw error;
      }
    };
    let midExpansion = 0;
    try {
      for (let tryNumber = 1; tryNumber <= 2; tryNumber++) {
        const worker = start("worker");
        await waitFor(`try ${tryNumber} of the mapped task's step to run`, () =>
          queryState(project!, "SELECT 1 FROM attempts WHERE task_id = 'work' AND try_number = ? AND state = 'running'", tryNumber).length > 0 ? true : undefined,
        60_000);
        // The write lock held for 300 ms on end while the step is still running to a reader: its
        // finish is writing the instances, uncommitted (the scheduler's writes last milliseconds).
        let heldSince: number | null = null;
        await waitFor("the expansion's transaction to be under way", () => {
          const held = writeLockHeld();
          heldSince = held ? (heldSince ?? Date.now()) : null;
          return heldSince !== null && Date.now() - heldSince >= 300 ? true : undefined;
        }, 60_000);
        const stillRunning = queryState(project!, "SELECT 1 FROM attempts WHERE task_id = 'work' AND try_number = ? AND state = 'running'", tryNumber).length > 0;
        await worker.kill9();
        const left = await expectNoneOrAll(state);
        if (stillRunning && left === 0) midExpansion++;
        if (left === KEYS) break;
      }
    } finally {
      probe.close();
    }
    expect(midExpansion).toBeGreaterThan(0);
    const fixer = new Database(join(project, ".idem", "state.db"));
    fixer.pragma("busy_timeout = 5000");
    fixer.exec("DROP TRIGGER test_slow_expansion");
    fixer.close();
    start("worker");
    await expectEveryKeyOnce(state);
  }, 300_000);

  it("a worker killed three times during a mapped run: every key succeeds once, its rows written once", async () => {
    const state = sqliteState();
    project = mappedRunProject(state);
    await killDuringMappedRun(state);
  }, 240_000);
});

describe.skipIf(!url)("mapped tasks under kill -9 (PostgreSQL, real processes)", () => {
  it("a worker killed while writing a 20,000-item expansion leaves none of it; the retry expands all, each key once", async () => {
    const state = postgresState();
    project = expansionProject(state);
    start("scheduler");
    await waitFor("the run", async () => ((await state.rows("SELECT 1 FROM runs")).length > 0 ? true : undefined));
    // The insert of the middle key (in the expansion's third statement) waits for an advisory
    // lock this test holds: the finish's transaction stops there, 10,000 instances written and
    // not committed, until the worker is dead.
    const lockKey = 1_000_000 + Math.floor(Math.random() * 1_000_000);
    await withAdmin(url!, async (c) => {
      await c.query(`SET search_path TO "${schema}"`);
      await c.query(`CREATE FUNCTION test_pause_expansion() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_advisory_xact_lock(${lockKey}); RETURN NULL; END $$`);
      await c.query(`CREATE TRIGGER test_pause_expansion AFTER INSERT ON task_instances FOR EACH ROW
        WHEN (NEW.map_key = '${key(KEYS / 2)}') EXECUTE FUNCTION test_pause_expansion()`);
    });
    const holder = new pg.Client({ connectionString: url! });
    clients.push(holder);
    await holder.connect();
    let midExpansion = 0;
    for (let tryNumber = 1; tryNumber <= 2; tryNumber++) {
      await holder.query("SELECT pg_advisory_lock($1)", [lockKey]);
      const worker = start("worker");
      const backend = await waitFor(`try ${tryNumber}'s expansion to reach the middle key`, async () => {
        const waiting = await holder.query<{ pid: number }>(
          "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = $1 AND NOT granted", [lockKey],
        );
        return waiting.rows[0]?.pid;
      }, 60_000);
      // Stopped mid-statement: nothing of it is visible.
      expect(await expectNoneOrAll(state)).toBe(0);
      await worker.kill9();
      await holder.query("SELECT pg_advisory_unlock($1)", [lockKey]);
      await waitFor("the dead worker's transaction to end", async () => {
        const alive = await holder.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state <> 'idle'", [backend]);
        return alive.rows.length === 0 ? true : undefined;
      });
      const left = await expectNoneOrAll(state);
      if (left === 0) midExpansion++;
      if (left === KEYS) break;
    }
    expect(midExpansion).toBeGreaterThan(0);
    await withAdmin(url!, async (c) => {
      await c.query(`SET search_path TO "${schema}"`);
      await c.query("DROP TRIGGER test_pause_expansion ON task_instances");
    });
    start("worker");
    await expectEveryKeyOnce(state);
  }, 300_000);

  it("a worker killed three times during a mapped run: every key succeeds once, its rows written once", async () => {
    const state = postgresState();
    project = mappedRunProject(state);
    await killDuringMappedRun(state);
  }, 240_000);
});
