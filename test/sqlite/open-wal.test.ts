/**
 * Two processes opening one fresh SQLite file at once (a scheduler and a worker started together
 * by a service manager, two loaders writing one new warehouse file): the second meets the first
 * in the middle of switching the file to WAL, i.e. holding the write lock on a file still in
 * rollback mode. SQLite refuses that second switch at once, whatever the busy timeout; opening
 * must wait it out rather than fail with "database is locked".
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSQLite, sql } from "../../src/data/index.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { holdWriteLock } from "../support/sqlite-lock.ts";

// Long enough that the lock is still held when this process, told "held", opens the file, even under load.
const HOLD_MS = 1_000;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function freshPath(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), "idem-open-wal-"));
  dirs.push(dir);
  return join(dir, name);
}

describe("opening a SQLite file another process is switching to WAL", () => {
  it("the state store waits for the lock, then migrates and is in WAL mode", async () => {
    const path = freshPath("state.db");
    const holder = await holdWriteLock(path, { holdMs: HOLD_MS });
    const store = new SqliteStore(path);
    await store.migrate();
    expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(store.db.prepare("SELECT x FROM holder").all()).toEqual([{ x: 1 }]);
    await store.close();
    expect(await holder.released).toBe(0);
  });

  it("a SQLite warehouse target does too", async () => {
    const path = freshPath("warehouse.sqlite");
    const holder = await holdWriteLock(path, { holdMs: HOLD_MS });
    const target = await openSQLite(path);
    expect(target.database.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(await target.query(sql`SELECT x FROM holder`)).toEqual([{ x: 1 }]);
    await target.close();
    expect(await holder.released).toBe(0);
  });
});
