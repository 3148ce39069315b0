import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { afterEach } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import { onTestFailed } from "vitest";

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
  /** What was started, for reports: `idem worker`, say. */
  name: string;
  child: ChildProcess;
  output: () => string;
  /** SIGKILL: no cleanup, no goodbye, as a crash or an OOM kill. */
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

/** Started and not yet stopped: what a wait that gives up reports on (an exited one says how it ended). */
const watched = new Set<Daemon>();

/** Starts `idem <args>` in the project as a separate process. */
export function startIdem(project: string, ...args: string[]): Daemon {
  return startProcess([process.execPath, bin, ...args], { cwd: project });
}

/** Starts `idem <args>` in the project with these variables added to its environment. */
export function startIdemWith(project: string, env: NodeJS.ProcessEnv, ...args: string[]): Daemon {
  return startProcess([process.execPath, bin, ...args], { cwd: project, env: { ...process.env, ...env } });
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
  const daemon: Daemon = {
    name: argv.map((a) => (a === process.execPath ? "node" : a === bin ? "idem" : a)).join(" ").replace(/^node idem /, "idem "),
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
      watched.delete(daemon);
    },
  };
  watched.add(daemon);
  // A failed expectation after the waits is explained too: each daemon of the test tells its story.
  try {
    onTestFailed(() => console.error(`${describeDaemon(daemon, 40)}\n`));
  } catch {
    // started outside a test (a beforeAll): only the waits report on it
  }
  return daemon;
}

/** How each daemon not yet stopped is doing, with its last output lines: what a wait that gave up saw. */
export function describeDaemons(lines = 20): string {
  if (watched.size === 0) return "no daemons running";
  return [...watched].map((d) => describeDaemon(d, lines)).join("\n");
}

function describeDaemon(d: Daemon, lines: number): string {
  const { pid, exitCode, signalCode } = d.child;
  const status = exitCode !== null ? `exited with code ${exitCode}` : signalCode !== null ? `killed by ${signalCode}` : "running";
  const tail = d.output().trimEnd().split("\n").slice(-lines);
  const shown = tail.length === 1 && tail[0] === "" ? ["(no output)"] : tail;
  return `${d.name} (pid ${pid}, ${status}):\n${shown.map((l) => `  | ${l}`).join("\n")}`;
}

/**
 * Polls until `check` returns a value (not undefined), or fails after `timeoutMs` with what it
 * saw: the check's last error, and every daemon started and not stopped, with its last lines.
 */
export async function waitFor<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = null;
  for (;;) {
    let value: T | undefined;
    try {
      value = await check();
    } catch (error) {
      lastError = error; // not there yet (no state file, a table not migrated yet)
      value = undefined;
    }
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      const checkSaid = lastError ? `\nthe check last threw: ${(lastError as Error).message ?? String(lastError)}` : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${checkSaid}\n${describeDaemons()}`);
    }
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
 * Per test file: the project a test makes, the daemons it starts there (stopped after each test,
 * then the project removed), and one-shot CLI calls in it.
 */
export function processHarness() {
  const daemons: Daemon[] = [];
  const harness = {
    project: "",
    create(files: Record<string, string>): string {
      harness.project = makeProject(files);
      return harness.project;
    },
    start(...args: string[]): Daemon {
      const daemon = startIdem(harness.project, ...args);
      daemons.push(daemon);
      return daemon;
    },
    cli(...args: string[]) {
      return harness.cliWith({}, ...args);
    },
    /** A one-shot call with these variables added to its environment. */
    cliWith(env: NodeJS.ProcessEnv, ...args: string[]) {
      return spawnSync(process.execPath, [bin, ...args], { cwd: harness.project, encoding: "utf8", maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...env } });
    },
  };
  afterEach(async () => {
    await Promise.all(daemons.splice(0).map((d) => d.stop()));
    if (harness.project) removeProject(harness.project);
    harness.project = "";
  });
  return harness;
}
