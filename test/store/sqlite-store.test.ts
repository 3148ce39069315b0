import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { describeStoreContract } from "./store-contract.ts";

const dirs: string[] = [];
describeStoreContract(
  "SQLite",
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-store-"));
    dirs.push(dir);
    return new SqliteStore(join(dir, "state.db"));
  },
  async (store) => {
    await store.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  },
);

describe("SQLite store specifics", () => {
  it("uses WAL so the scheduler, workers and the CLI can share the file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-store-"));
    const store = new SqliteStore(join(dir, "state.db"));
    await store.migrate();
    expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("migrates once, however many times it starts", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-store-"));
    const path = join(dir, "state.db");
    for (let i = 0; i < 3; i++) {
      const store = new SqliteStore(path);
      await store.migrate();
      await store.close();
    }
    const store = new SqliteStore(path);
    await store.migrate();
    const rows = store.db.prepare("SELECT version FROM schema_migrations ORDER BY version").all();
    expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("indexes only live task states for claiming", async () => {
    const store = new SqliteStore(":memory:");
    await store.migrate();
    const plan = store.db
      .prepare("EXPLAIN QUERY PLAN SELECT run_id, task_id FROM task_instances WHERE state = 'queued' ORDER BY priority DESC, queued_at LIMIT 10")
      .all() as { detail: string }[];
    expect(plan.map((p) => p.detail).join(" ")).toMatch(/task_instances_queued/);
    await store.close();
  });
});
