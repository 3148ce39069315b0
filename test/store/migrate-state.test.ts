import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { migrateState } from "../../src/store/migrate-state.ts";
import type { AttemptFinish, ClaimedAttempt, Store } from "../../src/store/port.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { dropSchema, freshSchema, schemaUrl, testPostgresUrl } from "../process/postgres-support.ts";
import { repo } from "../support/processes.ts";
import { newRun, tasksOf } from "../support/shapes.ts";

const url = testPostgresUrl();
const T0 = Date.parse("2026-09-02T02:00:00Z");
const EDGES: [string, string][] = [["a", "b"], ["b", "c"], ["a", "d"]];

describe.skipIf(!url)("idem migrate: SQLite state to PostgreSQL", () => {
  let dir: string;
  let file: string;
  let schema: string;
  let target: string;
  const open: Store[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "idem-migrate-"));
    file = join(dir, "state.db");
    schema = freshSchema();
    target = schemaUrl(url!, schema);
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
    await dropSchema(url!, schema);
  });

  async function sqlite(): Promise<SqliteStore> {
    const store = new SqliteStore(file);
    await store.migrate();
    open.push(store);
    return store;
  }

  async function postgres(): Promise<PostgresStore> {
    const store = new PostgresStore({ connectionString: target });
    await store.migrate();
    open.push(store);
    return store;
  }

  const finish = (c: ClaimedAttempt, overrides: Partial<AttemptFinish> = {}): AttemptFinish => ({
    attemptId: c.attemptId, workerId: "w1", now: T0 + 1_000, outcome: "success", retryable: true, retryAt: null,
    exitCode: 0, errorClass: null, errorMessage: null, summary: JSON.stringify({ rows: 3 }), skipReason: null, ...overrides,
  });
  const claim = (store: Store, now = T0) =>
    store.claimReady({ workerId: "w1", pid: 42, limit: 10, now, leaseMs: 30_000, logDir: "/logs" });

  /** A small installation with a bit of everything: finished and failed runs, a retry, a live run, audit, pause, pools, datasets, a backfill, freshness, an incident, watermarks. */
  async function buildHistory(store: Store): Promise<void> {
    await store.savePipelineVersion({ pipelineId: "p", version: "v1", definition: { edges: EDGES }, edges: EDGES.map(([parent, child]) => ({ parent, child })), createdAt: T0 });
    for (const day of ["2026-09-01", "2026-09-02", "2026-09-03"]) {
      await store.createRunIfAbsent(newRun({ runId: `p@${day}`, businessDate: day, cursor: Date.parse(`${day}T00:00:00Z`) + 86_400_000, tasks: tasksOf(["a", "b", "c", "d"], EDGES, { a: { maxTries: 2 } }) }));
    }
    for (let round = 0; round < 4; round++) {
      for (const c of await claim(store, T0 + round * 60_000)) {
        if (c.runId === "p@2026-09-02" && c.taskId === "a" && c.tryNumber === 1) {
          await store.finishAttempt(finish(c, { outcome: "failed", errorClass: "TaskFailed", errorMessage: "boom", retryAt: T0, exitCode: 1 }));
        } else if (c.runId === "p@2026-09-03" && c.taskId === "b") {
          continue; // still running
        } else {
          await store.finishAttempt(finish(c, { datasets: c.taskId === "c" ? ["orders"] : [], publishes: c.taskId === "c" ? [{ dataset: "orders", emptyReason: null }] : [] }));
        }
      }
    }
    await store.appendAudit({ at: T0, actor: "ana", action: "trigger", pipelineId: "p", runId: "p@2026-09-01", reason: "first load", graphVersion: "v1", details: { params: { mode: "append" } } });
    await store.setPaused({ pipelineId: "p", paused: true, note: "month end", actor: "bo", at: T0 });
    await store.skipIntervals({ pipelineId: "p", intervals: [{ start: Date.parse("2026-08-30T00:00:00Z"), end: Date.parse("2026-08-31T00:00:00Z"), businessDate: "2026-08-30" }], reason: "catch-up latest", at: T0, cursor: Date.parse("2026-09-04T00:00:00Z") });
    await store.setPool({ name: "warehouse", slots: 3, description: "the DWH", at: T0 });
    await store.collectDatasetEvents("q", ["orders"]);
    await store.createBackfill({
      backfillId: "bf1", pipelineId: "p", fromDate: "2026-08-01", toDate: "2026-08-02", reprocess: "failed", maxActiveRuns: 2, backwards: true,
      taskIds: ["a"], actor: "cy", reason: "fix", graphVersion: "v1", estimate: { minutes: 3 }, at: T0,
      items: [
        { businessDate: "2026-08-01", intervalStart: Date.parse("2026-08-01T00:00:00Z"), intervalEnd: Date.parse("2026-08-02T00:00:00Z"), action: "create", why: "missing", runId: "p@2026-08-01" },
        { businessDate: "2026-08-02", intervalStart: Date.parse("2026-08-02T00:00:00Z"), intervalEnd: Date.parse("2026-08-03T00:00:00Z"), action: "leave", why: "ok", runId: "p@2026-08-02" },
      ],
    });
    await store.markBackfillItemStarted("bf1", 0);
    await store.saveWatermark("p", "a", "2026-09-03T00:00:00Z", T0);
    await store.saveWatermark("p", "b", 42, T0);
    await store.openIncident({ key: "late:orders:2026-09-03", kind: "late", dataset: "orders", pipelineId: "p", businessDate: "2026-09-03", runId: null, message: "orders is late", notify: ["log"], at: T0 });
  }

  /** Everything the port can tell about an installation. */
  async function snapshot(store: Store) {
    // Runs created in the same millisecond come back in either order; compare them by id.
    const runs = (await store.listRuns({ limit: 100 })).sort((a, b) => a.runId.localeCompare(b.runId));
    const perRun = await Promise.all(runs.map(async (r) => ({
      tasks: await store.listTaskInstances(r.runId),
      attempts: await store.listAttempts(r.runId),
      nextRetryAt: await store.nextRetryAt(r.runId),
    })));
    return {
      runs,
      perRun,
      version: await store.getPipelineVersion("p", "v1"),
      audit: await store.listAudit({}),
      pipeline: await store.pipelineState("p", 0),
      consumer: await store.pipelineState("q", 0),
      ledger: await store.ledger("p", 0, Date.parse("2027-01-01T00:00:00Z")),
      pools: await store.listPools(),
      events: await store.listDatasetEvents({}),
      waits: await store.collectDatasetEvents("q", ["orders"]),
      backfill: await store.getBackfill("bf1"),
      items: await store.backfillItems("bf1"),
      freshness: await store.listFreshness("orders", "2026-01-01", "2026-12-31"),
      incidents: await store.listIncidents({}),
      alerts: await store.dueAlerts(T0 + 1, 10),
      watermarks: [await store.getWatermark("p", "a"), await store.getWatermark("p", "b")],
    };
  }

  it("copies every kind of history, so the PostgreSQL store tells exactly what the SQLite one did", async () => {
    const before = await sqlite();
    await buildHistory(before);
    const expected = await snapshot(before);
    await before.close();
    open.splice(0);

    const copied = await migrateState({ from: `sqlite:${file}`, to: target });
    expect(copied.get("runs")).toBe(3);
    expect(copied.get("task_instances")).toBe(12);
    expect(copied.get("attempts")).toBe(expected.perRun.reduce((n, r) => n + r.attempts.length, 0));

    const after = await postgres();
    expect(await snapshot(after)).toEqual(expected);
  });

  it("carries on where SQLite stopped: the running attempt can finish, new attempts get new ids", async () => {
    const before = await sqlite();
    await buildHistory(before);
    const [running] = (await before.listAttempts("p@2026-09-03", "b")).filter((a) => a.state === "running");
    await before.close();
    open.splice(0);
    await migrateState({ from: file, to: target });

    const after = await postgres();
    const outcome = await after.finishAttempt({
      attemptId: running!.attemptId, workerId: "w1", now: T0 + 9_000, outcome: "success", retryable: true, retryAt: null,
      exitCode: 0, errorClass: null, errorMessage: null, summary: null, skipReason: null,
    });
    expect(outcome).toEqual({ accepted: true, taskState: "success", runState: null });
    const [next] = await claim(after, T0 + 10_000);
    expect(next).toMatchObject({ runId: "p@2026-09-03", taskId: "c" });
    expect(next!.attemptId).toBeGreaterThan(running!.attemptId);
    await after.appendAudit({ at: T0, actor: "dan", action: "note", pipelineId: "p" });
    const ids = (await after.listAudit({})).map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("refuses a target that already holds state, and replaces it with --force", async () => {
    await buildHistory(await sqlite());
    const other = await postgres();
    await other.appendAudit({ at: T0, actor: "someone", action: "trigger", pipelineId: "elsewhere" });
    await expect(migrateState({ from: file, to: target })).rejects.toThrow(/already holds state \(audit_log\); add force to replace it$/);
    expect((await other.listAudit({})).map((e) => e.actor)).toEqual(["someone"]);

    await migrateState({ from: file, to: target, force: true });
    // the source's own entries, ana's action and its incident's opening by idem; "someone"'s are gone
    expect((await other.listAudit({})).map((e) => e.actor).sort()).toEqual(["ana", "watchdog"]);
  });

  it("runs as `idem migrate --from sqlite:... --to postgres://...` and prints what it copied", async () => {
    const store = await sqlite();
    await buildHistory(store);
    await store.close();
    open.splice(0);
    const result = spawnSync(process.execPath, [join(repo, "bin/idem.js"), "migrate", "--from", `sqlite:${file}`, "--to", target], { encoding: "utf8", cwd: dir, timeout: 60_000 });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^runs\s+3$/m);
    expect(result.stdout).toMatch(/^task_instances\s+12$/m);
    expect(result.stdout).toMatch(/copied \d+ row\(s\) in one transaction/);

    const again = spawnSync(process.execPath, [join(repo, "bin/idem.js"), "migrate", "--from", `sqlite:${file}`, "--to", target], { encoding: "utf8", cwd: dir, timeout: 60_000 });
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/already holds state.*--force/);
  });
});
