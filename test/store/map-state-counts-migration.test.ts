import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { expandItems } from "../../src/core/policy/fan-out.ts";
import { MIGRATIONS as PG_MIGRATIONS } from "../../src/store/postgres/migrations.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { AttemptFinish, ClaimedAttempt, Store } from "../../src/store/port.ts";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../../src/store/sqlite/migrations.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { dropSchema, freshSchema, testPostgresUrl } from "../process/postgres-support.ts";
import { newRun, tasksOf } from "../support/shapes.ts";

/**
 * Migration 33 counts a mapped task's instances by state on its own row. A store that expanded
 * mapped tasks before it gets the counts of what it holds, and the trigger keeps them after.
 */
const url = testPostgresUrl();
const T0 = Date.parse("2026-09-02T02:00:00Z");
const RUN = "p@2026-09-01";
const VERSION = 33;
const STATES = ["scheduled", "queued", "running", "success", "failed", "up_for_retry", "up_for_reschedule", "skipped", "upstream_failed", "removed"];
const COLUMNS = STATES.map((s) => `map_in_${s}`);
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0)) await step();
});

/** list -> load (mapped over 6 keys): 2 succeed, 1 fails, 1 runs, 2 wait in the queue. */
async function mappedRun(store: Store): Promise<ClaimedAttempt> {
  const edges: [string, string][] = [["list", "load"]];
  await store.savePipelineVersion({ pipelineId: "p", version: "m", definition: { edges }, edges: edges.map(([parent, child]) => ({ parent, child })), createdAt: T0 });
  await store.createRunIfAbsent(newRun({ graphVersion: "m", tasks: tasksOf(["list", "load"], edges) }));
  const claim = (limit: number) => store.claimReady({ workerId: "w", pid: 1, limit, now: T0, leaseMs: 60_000, logDir: "/logs" });
  const finish = (a: ClaimedAttempt, overrides: Partial<AttemptFinish> = {}): AttemptFinish => ({
    attemptId: a.attemptId, workerId: "w", now: T0 + 1, outcome: "success", retryable: false, retryAt: null, exitCode: 0,
    errorClass: null, errorMessage: null, summary: null, skipReason: null, ...overrides,
  });
  const [list] = await claim(1);
  await store.finishAttempt(finish(list!));
  const [load] = await claim(1);
  const expansion = expandItems(["a", "b", "c", "d", "e", "f"], { maxItems: 100 }, { pipelineId: "p", taskId: "load", businessDate: "2026-09-01" });
  if ("problem" in expansion) throw new Error(expansion.problem.message);
  await store.finishAttempt(finish(load!, { map: { items: expansion.items, maxActive: null } }));
  const started = await claim(4);
  await store.finishAttempt(finish(started[0]!));
  await store.finishAttempt(finish(started[1]!));
  await store.finishAttempt(finish(started[2]!, { outcome: "failed" }));
  return started[3]!;
}

async function expectCounted(store: Store, running: ClaimedAttempt): Promise<void> {
  const counts = async () => (await store.getTaskInstance(RUN, "load"))!.mapped!.states;
  expect(await counts()).toEqual({ scheduled: 0, queued: 2, running: 1, success: 2, failed: 1, up_for_retry: 0, up_for_reschedule: 0, skipped: 0, upstream_failed: 0, removed: 0 });
  const outcome = await store.finishAttempt({
    attemptId: running.attemptId, workerId: "w", now: T0 + 2, outcome: "success", retryable: false, retryAt: null, exitCode: 0,
    errorClass: null, errorMessage: null, summary: null, skipReason: null,
  });
  expect(outcome.accepted).toBe(true);
  expect(await counts()).toMatchObject({ running: 0, success: 3 });
}

/** The statement of migration 26 that made the trigger as it was before 33. */
function step26(migrations: readonly { version: number; sql: string }[], from: string, to: string): string {
  const sql = migrations.find((m) => m.version === 26)!.sql;
  const start = sql.indexOf(from);
  return sql.slice(start, sql.indexOf(to, start) + to.length);
}

describe(`migration ${VERSION}: a mapped task's instances counted by state`, () => {
  it("on SQLite, counts the instances of mapped tasks expanded before it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-map-counts-"));
    const store = new SqliteStore(join(dir, "state.db"));
    cleanup.push(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await store.migrate();
    const running = await mappedRun(store);
    // Back to the version before: no columns, the trigger of migration 26.
    store.db.exec(`DROP TRIGGER task_instances_map_counts; ${COLUMNS.map((c) => `ALTER TABLE task_instances DROP COLUMN ${c};`).join(" ")}
      ${step26(SQLITE_MIGRATIONS, "CREATE TRIGGER task_instances_map_counts", "END;")}
      DELETE FROM schema_migrations WHERE version = ${VERSION};`);
    expect((await store.getTaskInstance(RUN, "load"))!.mapped!.states.success).toBe(0);
    await store.migrate();
    await expectCounted(store, running);
  });

  it.skipIf(!url)("on PostgreSQL, the same", async () => {
    const store = new PostgresStore({ connectionString: url!, schema: freshSchema() });
    cleanup.push(async () => {
      await store.close();
      await dropSchema(url!, store.schema);
    });
    await store.migrate();
    const running = await mappedRun(store);
    await store.pool.query(`ALTER TABLE task_instances ${COLUMNS.map((c) => `DROP COLUMN ${c}`).join(", ")};
      ${step26(PG_MIGRATIONS, "CREATE FUNCTION task_instances_map_counts()", "$fn$;").replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")}
      DELETE FROM schema_migrations WHERE version = ${VERSION};`);
    await store.migrate();
    await expectCounted(store, running);
  });
});
