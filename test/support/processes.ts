import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";

export const repo = resolve(import.meta.dirname, "../..");
const bin = join(repo, "bin/idem.js");

/** A throwaway idem project inside the repo (so pipeline files resolve "idem" to this package). */
export function makeProject(files: Record<string, string>): string {
  mkdirSync(join(repo, ".tmp"), { recursive: true });
  const dir = mkdtempSync(join(repo, ".tmp", "proc-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

export function removeProject(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export interface Daemon {
  child: ChildProcess;
  output: () => string;
  /** SIGKILL: no cleanup, no goodbye, as a crash or an OOM kill. */
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts `idem <args>` in the project as a separate process. */
export function startIdem(project: string, ...args: string[]): Daemon {
  return startProcess([process.execPath, bin, ...args], { cwd: project });
}

/** Starts any command (an `ip netns exec ... idem worker`, say), collecting its output. */
export function startProcess(argv: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Daemon {
  const child = spawn(argv[0]!, argv.slice(1), { cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"], env: options.env ?? process.env });
  let text = "";
  child.stdout!.on("data", (d) => (text += d));
  child.stderr!.on("data", (d) => (text += d));
  // "close" comes once the output is fully read; a grandchild holding the pipe must not hang us.
  const closed = new Promise<void>((r) => child.once("close", () => r()));
  const exitedEvent = new Promise<void>((r) => child.once("exit", () => r()));
  const exited = exitedEvent.then(() => Promise.race([closed, new Promise<void>((r) => setTimeout(r, 2_000))]));
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    output: () => text,
    async kill9() {
      child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      if (alive()) child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (alive()) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Polls until `check` returns a value (not undefined), or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let value: T | undefined;
    try {
      value = check();
    } catch {
      value = undefined; // not there yet (no state file, a table not migrated yet)
    }
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Reads the project's state file directly, read-only, as an auditor would. */
export function queryState<T = Record<string, unknown>>(project: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(join(project, ".idem", "state.db"), { readonly: true, fileMustExist: true });
  try {
    db.pragma("busy_timeout = 5000");
    return db.prepare(sql).all(...params) as T[];
  } catch (error) {
    if (/no such table/.test((error as Error).message)) return [];
    throw error;
  } finally {
    db.close();
  }
}

/**
 * The project a process test works in and the daemons it started there: `start` runs `idem
 * <args>` in it, `cleanUp` (for afterEach) stops every daemon and removes the project.
 */
export function projectDaemons() {
  const daemons: Daemon[] = [];
  const self = {
    project: "",
    start(...args: string[]): Daemon {
      const daemon = startIdem(self.project, ...args);
      daemons.push(daemon);
      return daemon;
    },
    async cleanUp(): Promise<void> {
      await Promise.all(daemons.splice(0).map((d) => d.stop()));
      if (self.project) removeProject(self.project);
    },
  };
  return self;
}
