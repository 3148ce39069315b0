/**
 * Shared by the PostgreSQL benchmarks: a throwaway idem project whose state lives in a fresh
 * schema of the benchmark server, and `idem` processes started in it.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import pg from "pg";

export const repo = resolve(import.meta.dirname, "../../..");
const bin = join(repo, "bin/idem.js");

/** The server, or a printed reason to skip. */
export function benchUrl(name: string): string {
  const url = process.env.IDEM_TEST_PG_URL ?? process.env.IDEM_BENCH_PG_URL;
  if (!url) {
    console.log(JSON.stringify({ bench: name, skipped: "set IDEM_TEST_PG_URL (or IDEM_BENCH_PG_URL) to a PostgreSQL server" }));
    process.exit(0);
  }
  return url;
}

/** Ends the process if the benchmark hangs. */
export function bound(seconds: number, name: string): void {
  setTimeout(() => {
    console.log(JSON.stringify({ bench: name, error: `did not finish within ${seconds} s` }));
    process.exit(1);
  }, seconds * 1000).unref();
}

export function freshSchema(prefix = "bench"): string {
  return `${prefix}_${randomBytes(4).toString("hex")}`;
}

export function withSchema(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set("schema", schema);
  return u.toString();
}

export async function sql<T = Record<string, any>>(url: string, text: string, params: unknown[] = [], schema?: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, options: schema ? `-c search_path=${schema}` : undefined });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}

export function project(files: Record<string, string>): { dir: string; cleanup: () => void } {
  mkdirSync(join(repo, ".tmp"), { recursive: true });
  const dir = mkdtempSync(join(repo, ".tmp", "bench-pg-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function startIdem(dir: string, ...args: string[]) {
  // BENCH_WORKER_NODE_ARGS (for example "--cpu-prof --cpu-prof-dir=/tmp/prof") goes to the idem
  // processes' node only: not to the benchmark's own, nor to their task hosts.
  const nodeArgs = process.env.BENCH_WORKER_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, bin, ...args], { cwd: dir, stdio: ["ignore", "ignore", "inherit"] });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return {
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000, everyMs = 10): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function percentile(sorted: number[], q: number): number {
  return +sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2);
}
