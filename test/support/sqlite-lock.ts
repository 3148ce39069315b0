import { spawn } from "node:child_process";
import { repo } from "./processes.ts";

/**
 * Makes another process look, for a while, like one in the middle of switching a new SQLite file
 * to WAL: it creates the file (rollback mode, one table `holder` with one row uncommitted) and
 * holds its write lock. It lets go `holdMs` after it took the lock, or, with `after`, `holdMs`
 * after the file `after` appears (at most a minute).
 */
export async function holdWriteLock(path: string, options: { holdMs: number; after?: string }): Promise<{ released: Promise<number | null> }> {
  const holder = spawn(process.execPath, ["-e", `
    const { existsSync } = require("node:fs");
    const [path, holdMs, after] = process.argv.slice(1);
    const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
    const db = new (require("better-sqlite3"))(path);
    db.exec("CREATE TABLE holder (x)");
    db.exec("BEGIN IMMEDIATE");
    db.exec("INSERT INTO holder VALUES (1)");
    process.stdout.write("held\\n");
    for (const giveUpAt = Date.now() + 60000; after && !existsSync(after) && Date.now() < giveUpAt; ) pause(10);
    pause(Number(holdMs));
    db.exec("COMMIT");
    db.close();
  `, path, String(options.holdMs), options.after ?? ""], { cwd: repo, stdio: ["ignore", "pipe", "inherit"] });
  const released = new Promise<number | null>((r) => holder.once("exit", (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.on("data", (d) => String(d).includes("held") && resolve());
    void released.then((code) => reject(new Error(`the lock holder exited (${code}) before holding the lock`)));
  });
  // Wrapped: an async function that returned the promise itself would wait for it.
  return { released };
}
