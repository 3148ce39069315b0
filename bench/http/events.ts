/**
 * The events stream: from a task finishing (its finishAttempt committed, in a worker process of
 * its own) to the SSE event reaching a client connected to the server, over real HTTP on
 * 127.0.0.1. SQLite always; PostgreSQL too when IDEM_TEST_PG_URL (or IDEM_BENCH_PG_URL) is set.
 * Prints one JSON line. Target: p50 under 50 ms.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { createInterface } from "node:readline";
import pg from "pg";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { Store } from "../../src/store/port.ts";
import { benchServer, bound, percentile } from "./lib/serve.ts";

const FINISHES = 200;
const SPACING_MS = 25;
const DAY = 86_400_000;
const FIRST = Date.parse("2000-01-01T00:00:00Z");
const now = () => performance.timeOrigin + performance.now();

bound(600, "http-events");

/** The worker side, run as a child process: claims and finishes one task at a time, printing when each finish committed. */
async function finisher(location: string): Promise<void> {
  const store: Store = location.startsWith("postgres") ? new PostgresStore({ connectionString: location, poolSize: 2 }) : new SqliteStore(location);
  await store.migrate();
  for (let i = 0; i < FINISHES; i++) {
    const [claim] = await store.claimReady({ workerId: "bench-worker", pid: process.pid, limit: 1, now: Date.now(), leaseMs: 60_000, logDir: "/nonexistent/logs" });
    if (!claim) throw new Error("nothing to claim");
    await store.finishAttempt({
      attemptId: claim.attemptId, workerId: "bench-worker", now: Date.now(), outcome: "success", retryable: true, retryAt: null,
      exitCode: 0, errorClass: null, errorMessage: null, summary: null, skipReason: null,
    });
    process.stdout.write(`${claim.runId} ${now()}\n`);
    await new Promise((r) => setTimeout(r, SPACING_MS));
  }
  await store.close();
}

async function measure(location: string, store: Store): Promise<{ p50: number; p90: number; p99: number; events: number }> {
  await store.migrate();
  for (let i = 0; i < FINISHES; i++) {
    const start = FIRST + i * DAY;
    const date = new Date(start).toISOString().slice(0, 10);
    await store.createRunIfAbsent({
      runId: `bench@${date}`, pipelineId: "bench", intervalStart: start, intervalEnd: start + DAY, businessDate: date, graphVersion: "v1",
      trigger: "manual", triggeredBy: "bench", reason: null, params: {}, createdAt: Date.now(),
      tasks: [{ taskId: "load", hasUpstream: false, triggerRule: "all_success", maxTries: 1, pool: null, slots: 1, priority: 0 }],
    });
  }
  const dir = mkdtempSync(join(tmpdir(), "idem-bench-events-"));
  const bench = await benchServer(store, join(dir, ".idem"));
  const received = new Map<string, number>();
  const abort = new AbortController();
  const response = await fetch(`${bench.server.url}/api/v1/events`, { headers: { authorization: `Bearer ${bench.token}` }, signal: abort.signal });
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of response.body!) {
        const at = now();
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split("\n").find((l) => l.startsWith("data:"));
          if (!block.includes("event: task") || !data) continue;
          const event = JSON.parse(data.slice(5));
          if (event.state === "success") received.set(event.runId, at);
        }
      }
    } catch {
      // aborted at the end
    }
  })();
  const committed = new Map<string, number>();
  const child = spawn(process.execPath, [join(dirname(fileURLToPath(import.meta.url)), "../../bin/run-ts.js"), fileURLToPath(import.meta.url), "--finisher", location], { stdio: ["ignore", "pipe", "inherit"] });
  for await (const line of createInterface({ input: child.stdout! })) {
    const [runId, at] = line.split(" ");
    committed.set(runId!, Number(at));
  }
  const deadline = Date.now() + 10_000;
  while (received.size < committed.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  abort.abort();
  await reading;
  await bench.close();
  rmSync(dir, { recursive: true, force: true });
  const latencies = [...committed].filter(([runId]) => received.has(runId)).map(([runId, at]) => received.get(runId)! - at).sort((a, b) => a - b);
  if (latencies.length < committed.size) throw new Error(`only ${latencies.length} of ${committed.size} events arrived`);
  return { p50: percentile(latencies, 0.5), p90: percentile(latencies, 0.9), p99: percentile(latencies, 0.99), events: latencies.length };
}

if (process.argv.includes("--finisher")) {
  await finisher(process.argv.at(-1)!);
} else {
  const dir = mkdtempSync(join(tmpdir(), "idem-bench-events-db-"));
  const file = join(dir, "state.db");
  const sqliteStore = new SqliteStore(file);
  const sqlite = await measure(file, sqliteStore);
  await sqliteStore.close();
  rmSync(dir, { recursive: true, force: true });
  const url = process.env.IDEM_TEST_PG_URL ?? process.env.IDEM_BENCH_PG_URL;
  let postgres: unknown = "skipped: set IDEM_TEST_PG_URL";
  if (url) {
    const schema = `bench_${randomBytes(4).toString("hex")}`;
    const u = new URL(url);
    u.searchParams.set("schema", schema);
    const store = new PostgresStore({ connectionString: u.toString(), poolSize: 4 });
    try {
      postgres = await measure(u.toString(), store);
    } finally {
      await store.close();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
    }
  }
  console.log(JSON.stringify({ bench: "http-events", finishes: FINISHES, spacingMs: SPACING_MS, unit: "ms", from: "finishAttempt committed in a worker process", to: "SSE event read by the client", sqlite, postgres }));
}
