/**
 * What external tasks waiting on remote jobs hold (issue 31: "waiting holds nothing"), in a real
 * project on a SQLite state file with one `idem scheduler` and one `idem worker` at its default
 * concurrency. The remote jobs live in a job server this process runs on 127.0.0.1, driven by the
 * generic HTTP adapter (`httpJob`); it keeps every job running until the benchmark releases them.
 * Each round, interleaved:
 *   idle:     a pipeline of BENCH_NOOPS no-op tasks with nothing waiting; tasks/s
 *   held:     BENCH_EXTERNAL external tasks submitted and waiting; sampled for 2 s: attempts
 *             running in the store (polls are short attempts, hence max and mean; attempts claimed
 *             ahead of free slots by the worker's prefetch count too), task instances up for
 *             reschedule, the worker's task host processes alive, and polls served
 *   waiting:  the same no-op pipeline (another date) while they wait; tasks/s
 *   release:  ms from the jobs' release to every external task succeeded (at most one poll interval)
 * Prints one JSON line. Env: BENCH_EXTERNAL (200), BENCH_NOOPS (1000), BENCH_ROUNDS (3),
 * BENCH_POLL_INTERVAL (5s, no backoff: more polls than the default 30 s with backoff).
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import Database from "better-sqlite3";
import { bound, project, repo, startIdem, until } from "../pg/lib/cluster.ts";

const NAME = "external-waiting";
const EXTERNAL = Number(process.env.BENCH_EXTERNAL ?? 200);
const NOOPS = Number(process.env.BENCH_NOOPS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POLL_INTERVAL = process.env.BENCH_POLL_INTERVAL ?? "5s";
bound(1200, NAME);

/** The job server: a submit under a token it has seen answers that job (as Databricks does). */
const jobs = new Map<string, { state: "RUNNING" | "SUCCESS" | "CANCELED" }>();
const byToken = new Map<string, string>();
let polls = 0;
const server = createServer((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    const answer = (status: number, value: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(value));
    };
    const url = new URL(req.url!, "http://127.0.0.1");
    if (req.method === "POST" && url.pathname === "/jobs") {
      const { token } = JSON.parse(body) as { token: string };
      let id = byToken.get(token);
      if (!id) {
        id = String(jobs.size + 1);
        jobs.set(id, { state: "RUNNING" });
        byToken.set(token, id);
      }
      return answer(200, { id });
    }
    const job = jobs.get(url.pathname.split("/")[2] ?? "");
    if (!job) return answer(404, { error: `no job at ${url.pathname}` });
    if (req.method === "GET") {
      polls++;
      return answer(200, { state: job.state });
    }
    if (req.method === "POST" && url.pathname.endsWith("/cancel")) {
      job.state = "CANCELED";
      return answer(200, {});
    }
    answer(404, { error: `no route ${req.method} ${url.pathname}` });
  });
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const noopTasks = Array.from({ length: NOOPS }, (_, i) => `  t${i}: { run: () => {} },`).join("\n");
const externalTasks = Array.from({ length: EXTERNAL }, (_, i) =>
  `  e${i}: { external: job, pollInterval: ${JSON.stringify(POLL_INTERVAL)}, pollBackoff: false },`).join("\n");
const { dir, cleanup } = project({
  "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({});\n`,
  "pipelines/bench.ts": `import { pipeline, httpJob } from "idem";
const job = httpJob({
  submit: { url: ${JSON.stringify(`${base}/jobs`)}, body: (_ctx, key) => ({ token: key }), handle: "id" },
  status: { url: ${JSON.stringify(`${base}/jobs/{handle}`)}, state: "state", running: ["RUNNING"], succeeded: ["SUCCESS"] },
  cancel: { url: ${JSON.stringify(`${base}/jobs/{handle}/cancel`)} },
});
// No caps of their own: the worker's slots are what is measured.
export const remote = pipeline("remote", { schedule: "manual", maxActiveTasks: 100000 }, {
${externalTasks}
});
export const noop = pipeline("noop", { schedule: "manual", maxActiveTasks: 100000 }, {
${noopTasks}
});
`,
});

const bin = join(repo, "bin/idem.js");
function idem(...args: string[]): void {
  const result = spawnSync(process.execPath, [bin, ...args], { cwd: dir, encoding: "utf8", timeout: 60_000 });
  if (result.status !== 0) throw new Error(`idem ${args.join(" ")} exited ${result.status}: ${result.stdout}${result.stderr}`);
}

// Opened once the worker has created and migrated the state file.
let db: Database.Database | undefined;
const one = <T>(text: string, ...params: unknown[]) => db!.prepare(text).get(...params) as T;

/** The worker's children: its task hosts (from /proc, as bench/core/task-host-cost.ts reads them). */
function childrenOf(pid: number): number {
  return readdirSync(`/proc/${pid}/task`).reduce((n, tid) => {
    const children = readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim();
    return n + (children ? children.split(/\s+/).length : 0);
  }, 0);
}

const runState = (runId: string) => one<{ state: string } | undefined>("SELECT state FROM runs WHERE run_id = ?", runId)?.state;

async function noopRun(date: string): Promise<{ tasksPerSecond: number; wallMs: number }> {
  const runId = `noop@${date}`;
  const t0 = Date.now();
  idem("trigger", "noop", "--date", date);
  await until(`${runId} to succeed`, async () => runState(runId) === "success", 300_000, 20);
  const wallMs = Date.now() - t0;
  const span = one<{ s: number; e: number; n: number }>("SELECT min(started_at) AS s, max(ended_at) AS e, count(*) AS n FROM attempts WHERE run_id = ?", runId);
  if (span.n !== NOOPS) throw new Error(`${runId}: ${span.n} attempts for ${NOOPS} tasks`);
  return { tasksPerSecond: Math.round(span.n / ((span.e - span.s) / 1000)), wallMs };
}

async function sampleHeld(runId: string, workerPid: number) {
  const running: number[] = [];
  const waiting: number[] = [];
  let hosts = 0;
  const pollsBefore = polls;
  for (let i = 0; i < 40; i++) {
    running.push(one<{ n: number }>("SELECT count(*) AS n FROM attempts WHERE state = 'running'").n);
    waiting.push(one<{ n: number }>("SELECT count(*) AS n FROM task_instances WHERE run_id = ? AND state = 'up_for_reschedule'", runId).n);
    hosts = Math.max(hosts, childrenOf(workerPid));
    await new Promise((r) => setTimeout(r, 50));
  }
  const mean = (values: number[]) => +(values.reduce((a, b) => a + b, 0) / values.length).toFixed(2);
  return {
    runningAttemptsMax: Math.max(...running), runningAttemptsMean: mean(running),
    upForRescheduleMin: Math.min(...waiting), taskHostsAliveMax: hosts, pollsServedIn2s: polls - pollsBefore,
  };
}

const scheduler = startIdem(dir, "scheduler");
const worker = startIdem(dir, "worker");
try {
  await until("the worker to register", async () => {
    if (!db && existsSync(join(dir, ".idem", "state.db"))) {
      db = new Database(join(dir, ".idem", "state.db"), { readonly: true });
      db.pragma("busy_timeout = 5000");
    }
    return db !== undefined && one<{ n: number } | undefined>("SELECT count(*) AS n FROM sqlite_master WHERE name = 'workers'")!.n === 1 &&
      one<{ n: number }>("SELECT count(*) AS n FROM workers").n === 1;
  }, 60_000, 50);
  const workerConcurrency = one<{ concurrency: number }>("SELECT concurrency FROM workers").concurrency;
  await noopRun("2026-01-01"); // warm up: task hosts booted, pipeline file loaded, page cache

  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    const idle = await noopRun(`2026-02-0${round + 1}`);
    const remoteRun = `remote@2026-03-0${round + 1}`;
    const jobsBefore = jobs.size;
    idem("trigger", "remote", "--date", `2026-03-0${round + 1}`);
    await until(`${EXTERNAL} jobs submitted and waiting`, async () =>
      jobs.size - jobsBefore === EXTERNAL &&
      one<{ n: number }>("SELECT count(*) AS n FROM task_instances WHERE run_id = ? AND state = 'up_for_reschedule'", remoteRun).n === EXTERNAL,
    120_000, 50);
    const held = await sampleHeld(remoteRun, worker.pid);
    const waiting = await noopRun(`2026-04-0${round + 1}`);
    const stillWaiting = one<{ n: number }>("SELECT count(*) AS n FROM task_instances WHERE run_id = ? AND state = 'up_for_reschedule'", remoteRun).n;
    const released = Date.now();
    for (const job of jobs.values()) if (job.state === "RUNNING") job.state = "SUCCESS";
    await until(`${remoteRun} to succeed`, async () => runState(remoteRun) === "success", 300_000, 20);
    rounds.push({ idle, held, waiting, stillWaitingAfterNoops: stillWaiting, releaseToSuccessMs: Date.now() - released });
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(JSON.stringify({
    bench: NAME,
    external: EXTERNAL, noops: NOOPS, pollInterval: POLL_INTERVAL, workerConcurrency,
    jobsSubmitted: jobs.size, rounds,
    waitingOverIdle: +median(rounds.map((r) => r.waiting.tasksPerSecond / r.idle.tasksPerSecond)).toFixed(3),
  }));
} finally {
  await worker.stop();
  await scheduler.stop();
  db?.close();
  server.close();
  cleanup();
}
