import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ErrorClass } from "../../src/core/model/error-classes.ts";
import { MIGRATIONS as PG_MIGRATIONS } from "../../src/store/postgres/migrations.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { Store } from "../../src/store/port.ts";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../../src/store/sqlite/migrations.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { dropSchema, freshSchema, testPostgresUrl } from "../process/postgres-support.ts";
import { newRun, tasksOf } from "../support/shapes.ts";

const url = testPostgresUrl();
const T0 = Date.parse("2026-09-02T02:00:00Z");
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0)) await step();
});

/** Attempts as versions before 18 recorded them: a thrown exception under its own name. */
async function oldStyleAttempts(store: Store): Promise<void> {
  const classes: [string, string | null, string | null][] = [
    ["a", "TypeError", "x is undefined"], ["b", "Error", "boom"], ["c", "Timeout", "timed out after 5s"], ["d", null, null], ["e", "FetchError", null],
  ];
  await store.createRunIfAbsent(newRun({ tasks: tasksOf(classes.map(([task]) => task)) }));
  const claimed = await store.claimReady({ workerId: "w", pid: 1, limit: 10, now: T0, leaseMs: 30_000, logDir: "/logs" });
  for (const [task, errorClass, errorMessage] of classes) {
    const attempt = claimed.find((c) => c.taskId === task)!;
    await store.finishAttempt({
      attemptId: attempt.attemptId, workerId: "w", now: T0 + 1, outcome: errorClass ? "failed" : "success", retryable: false, retryAt: null,
      exitCode: null, errorClass: errorClass as ErrorClass | null, errorMessage, summary: null, skipReason: null,
    });
  }
}

async function classesAndMessages(store: Store) {
  return (await store.listAttempts("p@2026-09-01")).sort((x, y) => x.taskId.localeCompare(y.taskId)).map((a) => [a.taskId, a.errorClass, a.errorMessage]);
}

const AFTER = [
  ["a", "TaskFailed", "TypeError: x is undefined"],
  ["b", "TaskFailed", "boom"],
  ["c", "Timeout", "timed out after 5s"],
  ["d", null, null],
  ["e", "TaskFailed", "FetchError"],
];

describe("migration 18: error classes as a closed set", () => {
  it("on SQLite, makes an old exception-named class TaskFailed with the name at the head of the message, leaving idem's own classes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-classes-"));
    const store = new SqliteStore(join(dir, "state.db"));
    cleanup.push(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await store.migrate();
    await oldStyleAttempts(store);
    store.db.exec(SQLITE_MIGRATIONS.find((m) => m.version === 18)!.sql);
    expect(await classesAndMessages(store)).toEqual(AFTER);
  });

  it.skipIf(!url)("on PostgreSQL, the same", async () => {
    const store = new PostgresStore({ connectionString: url!, schema: freshSchema() });
    cleanup.push(async () => {
      await store.close();
      await dropSchema(url!, store.schema);
    });
    await store.migrate();
    await oldStyleAttempts(store);
    await store.pool.query(PG_MIGRATIONS.find((m) => m.version === 18)!.sql);
    expect(await classesAndMessages(store)).toEqual(AFTER);
  });
});
