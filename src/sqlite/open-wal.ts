import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";

/** How long a statement waits for another process's lock before "database is locked". */
export const BUSY_TIMEOUT_MS = 10_000;

/**
 * Opens (or creates) a SQLite file that several processes share, in WAL mode, waiting for the
 * others' locks up to `busyTimeoutMs` (default BUSY_TIMEOUT_MS).
 *
 * The switch to WAL is the one step the busy timeout does not cover. SQLite reads the file's
 * header in a read transaction, then upgrades to an exclusive lock to rewrite it; it never waits
 * on an upgrade inside a transaction (that could deadlock), so a process that opens a fresh file
 * while another is switching it gets SQLITE_BUSY within milliseconds, whatever the timeout. Two
 * daemons started together by a service manager hit exactly that. Trying again after a short
 * pause is safe: by then the file is in WAL mode already, or this connection switches it.
 */
export function openWalDatabase(path: string, busyTimeoutMs: number = BUSY_TIMEOUT_MS): Database.Database {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const timeout = Math.max(0, Math.floor(busyTimeoutMs));
  const db = new Database(path, { timeout });
  const deadline = Date.now() + timeout;
  for (let pauseMs = 1; ; pauseMs = Math.min(pauseMs * 2, 100)) {
    try {
      db.pragma("journal_mode = WAL");
      return db;
    } catch (error) {
      if ((error as { code?: string }).code !== "SQLITE_BUSY" || Date.now() + pauseMs > deadline) {
        db.close();
        throw error;
      }
      // Opening is synchronous (as every better-sqlite3 call, busy waits included): pause in place.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pauseMs);
    }
  }
}
