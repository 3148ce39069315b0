import { afterEach, describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../src/store/postgres/migrations.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { AttemptFinish, ClaimedAttempt, Store } from "../../src/store/port.ts";
import { dropSchema, freshSchema, queryPg, testPostgresUrl, withAdmin } from "../process/postgres-support.ts";
import { newRun, tasksOf } from "../support/shapes.ts";
import { describeStoreContract } from "./store-contract.ts";
import { describeRunCounts } from "./run-counts.ts";

const url = testPostgresUrl();
const T0 = Date.parse("2026-09-02T02:00:00Z");
const LOG_DIR = "/logs";

describe.skipIf(!url)("PostgreSQL store", () => {
  describeStoreContract(
    "PostgreSQL",
    async () => new PostgresStore({ connectionString: url!, schema: freshSchema() }),
    async (store: Store) => {
      const pgStore = store as PostgresStore;
      await pgStore.close();
      await dropSchema(url!, pgStore.schema);
    },
    { channels: true },
  );

  describeRunCounts("PostgreSQL", async () => {
    const store = new PostgresStore({ connectionString: url!, schema: freshSchema(), poolSize: 2 });
    await store.migrate();
    return {
      store,
      async counts(runId) {
        const [run] = (await store.pool.query("SELECT live_tasks, failed_tasks FROM runs WHERE run_id = $1", [runId])).rows;
        const rows = (await store.pool.query("SELECT state, count(*)::int AS n FROM task_instances WHERE run_id = $1 GROUP BY state", [runId])).rows;
        return { liveTasks: run.live_tasks, failedTasks: run.failed_tasks, byState: Object.fromEntries(rows.map((r) => [r.state, r.n])) };
      },
      async setState(runId, taskId, state) {
        await store.pool.query("UPDATE task_instances SET state = $3 WHERE run_id = $1 AND task_id = $2", [runId, taskId, state]);
      },
      async close() {
        await store.close();
        await dropSchema(url!, store.schema);
      },
    };
  }, { runs: 20 });

  /** Several stores on one schema: as many processes (or machines) sharing one database. */
  let schema: string;
  let stores: PostgresStore[] = [];
  async function openStores(n: number, options: { migrate?: boolean } = {}): Promise<PostgresStore[]> {
    schema ??= freshSchema();
    const opened = Array.from({ length: n }, () => new PostgresStore({ connectionString: url!, schema, poolSize: 4 }));
    stores.push(...opened);
    if (options.migrate !== false) for (const s of opened) await s.migrate();
    return opened;
  }
  afterEach(async () => {
    await Promise.all(stores.map((s) => s.close()));
    stores = [];
    if (schema) await dropSchema(url!, schema);
    schema = undefined as unknown as string;
  });

  const claimBy = (store: Store, workerId: string, limit: number, now = T0): Promise<ClaimedAttempt[]> =>
    store.claimReady({ workerId, pid: 1, limit, now, leaseMs: 30_000, logDir: LOG_DIR });

  const success = (attempt: ClaimedAttempt, workerId: string, now = T0 + 1): AttemptFinish => ({
    attemptId: attempt.attemptId, workerId, now, outcome: "success", retryable: true, retryAt: null,
    exitCode: null, errorClass: null, errorMessage: null, summary: null, skipReason: null,
  });

  async function saveGraph(store: Store, version: string, edges: [string, string][]) {
    await store.savePipelineVersion({
      pipelineId: "p", version, definition: {}, edges: edges.map(([parent, child]) => ({ parent, child })), createdAt: T0,
    });
  }

  describe("several processes on one database", () => {
    it("never hands one task instance to two claimers, however many claim at once", async () => {
      const [first, ...others] = await openStores(4);
      const ids = Array.from({ length: 300 }, (_, i) => `t${String(i).padStart(3, "0")}`);
      await saveGraph(first!, "flat", []);
      await first!.createRunIfAbsent(newRun({ graphVersion: "flat", tasks: tasksOf(ids) }));

      const claimedBy = await Promise.all([first!, ...others].map(async (store, w) => {
        const mine: string[] = [];
        for (;;) {
          const batch = await claimBy(store, `w${w}`, 7);
          if (batch.length === 0) return mine;
          mine.push(...batch.map((c) => c.taskId));
          await Promise.all(batch.map((c) => store.finishAttempt(success(c, `w${w}`))));
        }
      }));

      const all = claimedBy.flat();
      expect(all).toHaveLength(300);
      expect(new Set(all).size).toBe(300);
      expect(claimedBy.filter((mine) => mine.length > 0).length).toBeGreaterThan(1);
      const [counts] = await queryPg(url!, schema, "SELECT count(*)::int AS attempts, count(DISTINCT task_id)::int AS tasks FROM attempts");
      expect(counts).toEqual({ attempts: 300, tasks: 300 });
      expect((await first!.getRun("p@2026-09-01"))!.state).toBe("success");
    });

    /**
     * Holds the given task instances locked until `release`: transactions that finish them wait,
     * then all go at the same moment, the way finishes race on a busy cluster.
     */
    async function gate(runIds: string[]): Promise<{ release: () => Promise<void> }> {
      const admin = await connectAdmin();
      await admin.query("BEGIN");
      await admin.query("SELECT 1 FROM task_instances WHERE run_id = ANY($1) FOR UPDATE", [runIds]);
      return {
        release: async () => {
          await admin.query("COMMIT");
          await admin.end();
        },
      };
    }

    async function connectAdmin() {
      const pg = (await import("pg")).default;
      const client = new pg.Client({ connectionString: url!, options: `-c search_path=${schema}` });
      await client.connect();
      return client;
    }

    /** Finishes both attempts of each run at once, one on each store. */
    async function finishPairsTogether(a: Store, b: Store, claimed: ClaimedAttempt[]) {
      const byRun = new Map<string, ClaimedAttempt[]>();
      for (const c of claimed) byRun.set(c.runId, [...(byRun.get(c.runId) ?? []), c]);
      const held = await gate([...byRun.keys()]);
      const finishing = [...byRun.values()].map(([one, other]) =>
        Promise.all([a.finishAttempt(success(one!, "w")), b.finishAttempt(success(other!, "w"))]));
      await new Promise((r) => setTimeout(r, 100)); // all of them waiting on the gate
      await held.release();
      await Promise.all(finishing);
    }

    it("starts a child once when its two parents finish at the same moment on two connections", async () => {
      const [a, b] = await openStores(2);
      await saveGraph(a!, "fan-in", [["x", "z"], ["y", "z"]]);
      const days = Array.from({ length: 28 }, (_, i) => `2026-08-${String(i + 1).padStart(2, "0")}`);
      for (const day of days) {
        await a!.createRunIfAbsent(newRun({ runId: `p@${day}`, businessDate: day, graphVersion: "fan-in", tasks: tasksOf(["x", "y", "z"], [["x", "z"], ["y", "z"]]) }));
      }
      const claimed = await claimBy(a!, "w", 1000);
      expect(claimed).toHaveLength(days.length * 2);
      await finishPairsTogether(a!, b!, claimed);

      const children = await queryPg(url!, schema, "SELECT state, count(*)::int AS n FROM task_instances WHERE task_id = 'z' GROUP BY state");
      expect(children).toEqual([{ state: "queued", n: days.length }]);
    });

    it("finishes a run when its last two tasks end at the same moment on two connections", async () => {
      const [a, b] = await openStores(2);
      await saveGraph(a!, "pair", []);
      const days = Array.from({ length: 28 }, (_, i) => `2026-08-${String(i + 1).padStart(2, "0")}`);
      for (const day of days) {
        await a!.createRunIfAbsent(newRun({ runId: `p@${day}`, businessDate: day, graphVersion: "pair", tasks: tasksOf(["x", "y"]) }));
      }
      await finishPairsTogether(a!, b!, await claimBy(a!, "w", 1000));

      const runs = await a!.listRuns({ pipelineId: "p", limit: 100 });
      expect(runs.map((r) => r.state)).toEqual(days.map(() => "success"));
    });

    it("records finishes that arrive together in one go, with the outcome of recording them one by one", async () => {
      const [store] = await openStores(1);
      await saveGraph(store!, "v1", [["x", "z"], ["y", "z"]]);
      await store!.createRunIfAbsent(newRun({ tasks: tasksOf(["w1", "w2", "x", "y", "z"], [["x", "z"], ["y", "z"]]) }));
      const claimed = new Map((await claimBy(store!, "w", 10)).map((c) => [c.taskId, c]));
      // w1 and w2 are being recorded (held at the gate); x and y arrive meanwhile and go together.
      const held = await gate(["p@2026-09-01"]);
      const first = [store!.finishAttempt(success(claimed.get("w1")!, "w")), store!.finishAttempt(success(claimed.get("w2")!, "w"))];
      await new Promise((r) => setTimeout(r, 50));
      const failed = (task: string) => ({ ...success(claimed.get(task)!, "w"), outcome: "failed" as const, errorClass: "TaskFailed" as const, errorMessage: task });
      const together = [store!.finishAttempt(failed("x")), store!.finishAttempt(failed("y"))];
      await new Promise((r) => setTimeout(r, 50));
      await held.release();
      await Promise.all(first);
      expect(await Promise.all(together)).toEqual([
        { accepted: true, taskState: "failed", runState: null },
        { accepted: true, taskState: "failed", runState: "failed" },
      ]);
      const z = (await store!.listTaskInstances("p@2026-09-01")).find((t) => t.taskId === "z")!;
      // As after x alone: y was still running when x's failure reached z.
      expect(z).toMatchObject({ state: "upstream_failed", reason: "upstream: 1 task(s) failed" });
    });

    it("never lets concurrent claimers take more slots than a pool has", async () => {
      const claimers = await openStores(4);
      const [first] = claimers;
      await first!.setPool({ name: "warehouse", slots: 2, at: T0 });
      await saveGraph(first!, "pooled", []);
      const ids = Array.from({ length: 24 }, (_, i) => `t${i}`);
      await first!.createRunIfAbsent(newRun({
        graphVersion: "pooled",
        tasks: tasksOf(ids, [], Object.fromEntries(ids.map((id) => [id, { pool: "warehouse" }]))),
      }));
      let mostAtOnce = 0;
      let done = 0;
      while (done < ids.length) {
        const batches = await Promise.all(claimers.map((s, w) => claimBy(s, `w${w}`, 5)));
        const [running] = await queryPg<{ n: number }>(url!, schema, "SELECT count(*)::int AS n FROM task_instances WHERE state = 'running'");
        mostAtOnce = Math.max(mostAtOnce, running!.n);
        for (const [w, batch] of batches.entries()) {
          for (const c of batch) await claimers[w]!.finishAttempt(success(c, `w${w}`));
          done += batch.length;
        }
      }
      expect(mostAtOnce).toBe(2);
    });

    it("migrates once when several processes start together", async () => {
      const starting = await openStores(3, { migrate: false });
      await Promise.all(starting.map((s) => s.migrate()));
      const versions = await queryPg<{ version: number }>(url!, schema, "SELECT version FROM schema_migrations ORDER BY version");
      expect(versions).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
      await starting[0]!.migrate();
      expect(await queryPg(url!, schema, "SELECT version FROM schema_migrations")).toHaveLength(MIGRATIONS.length);
    });
  });

  describe("the work channel (LISTEN/NOTIFY)", () => {
    it("wakes a listening process within milliseconds of a run being created elsewhere", async () => {
      const [listener, writer] = await openStores(2);
      let heardAt = 0;
      const stop = await listener!.watchWork(() => (heardAt ||= performance.now()));
      await saveGraph(writer!, "v1", []);
      const sentAt = performance.now();
      await writer!.createRunIfAbsent(newRun({ tasks: tasksOf(["a"]) }));
      await until(() => heardAt > 0, 2_000);
      console.info(`work channel: heard ${(heardAt - sentAt).toFixed(1)} ms after the commit began`);
      expect(heardAt - sentAt).toBeLessThan(250);
      await stop();
    });

    it("wakes listeners when a finished task makes its child eligible, and only on commit", async () => {
      const [listener, writer] = await openStores(2);
      await saveGraph(writer!, "v1", [["a", "b"]]);
      await writer!.createRunIfAbsent(newRun({ tasks: tasksOf(["a", "b"], [["a", "b"]]) }));
      const [a] = await claimBy(writer!, "w", 1);
      let wakes = 0;
      const stop = await listener!.watchWork(() => wakes++);
      const refused = await writer!.finishAttempt(success(a!, "someone-else"));
      expect(refused.accepted).toBe(false);
      await new Promise((r) => setTimeout(r, 150));
      expect(wakes).toBe(0);
      await writer!.finishAttempt(success(a!, "w"));
      await until(() => wakes > 0, 2_000);
      await stop();
    });
  });

  describe("connection loss", () => {
    async function killConnections(applicationName: string): Promise<number> {
      return withAdmin(url!, async (c) => {
        const { rows } = await c.query(
          "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()",
          [applicationName],
        );
        return rows.length;
      });
    }

    it("carries on with the next call after the server drops its connections", async () => {
      const [store] = await openStores(1);
      await saveGraph(store!, "v1", []);
      await store!.createRunIfAbsent(newRun({ tasks: tasksOf(["a", "b"]) }));
      expect(await killConnections(`idem:${schema}`)).toBeGreaterThan(0);
      const claimed = await claimBy(store!, "w", 1);
      expect(claimed.map((c) => c.taskId)).toEqual(["a"]);
      expect(await killConnections(`idem:${schema}`)).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 50));
      expect((await store!.finishAttempt(success(claimed[0]!, "w"))).accepted).toBe(true);
      expect((await store!.listTaskInstances("p@2026-09-01")).map((t) => t.state)).toEqual(["success", "queued"]);
    });

    it("reports an ordinary error when the server stays out of reach longer than it waits", async () => {
      const unreachable = new PostgresStore({ connectionString: "postgres://idem@127.0.0.1:1/nowhere", schema: "idem_t_nowhere", reconnectWithinMs: 0 });
      stores.push(unreachable);
      await expect(unreachable.getRun("p@2026-09-01")).rejects.toThrow(/ECONNREFUSED|connect/);
      await expect(unreachable.getRun("p@2026-09-01")).rejects.toThrow(/ECONNREFUSED|connect/);
    });

    it("listens again after its listening connection is killed, and hears new work", async () => {
      const [listener, writer] = await openStores(2);
      await saveGraph(writer!, "v1", []);
      let wakes = 0;
      const stop = await listener!.watchWork(() => wakes++);
      expect(await killConnections(`idem:${schema}:listen`)).toBe(1);
      // Reconnecting wakes once by itself: notifications sent while it was away are lost.
      await until(() => wakes > 0, 5_000);
      await until(async () => (await listenersOf(`idem:${schema}:listen`)) === 1, 5_000);
      wakes = 0;
      await writer!.createRunIfAbsent(newRun({ tasks: tasksOf(["a"]) }));
      await until(() => wakes > 0, 2_000);
      await stop();
    });

    async function listenersOf(applicationName: string): Promise<number> {
      return withAdmin(url!, async (c) => (await c.query("SELECT 1 FROM pg_stat_activity WHERE application_name = $1", [applicationName])).rowCount ?? 0);
    }
  });

  describe("cost follows live work", () => {
    it("claims through the partial index of queued rows, ordered as claiming needs", async () => {
      await openStores(1); // migrates the schema whose plan is read
      const plan = await withAdmin(url!, async (c) => {
        await c.query(`SET search_path TO "${schema}"`);
        await c.query("SET enable_seqscan = off");
        const { rows } = await c.query(`EXPLAIN SELECT run_id, task_id FROM task_instances WHERE state = 'queued'
          ORDER BY from_backfill, priority DESC, queued_at, task_id LIMIT 10 FOR UPDATE SKIP LOCKED`);
        return rows.map((r) => r["QUERY PLAN"]).join("\n");
      });
      expect(plan).toMatch(/Index Scan using task_instances_queued/);
      expect(plan).not.toMatch(/Sort/);
    });
  });
});

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
