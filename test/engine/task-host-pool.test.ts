import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { importTypeScript } from "../../src/engine/project/typescript-cache.ts";
import { TaskHostPool } from "../../src/engine/task-host/pool.ts";
import { EngineEvents } from "../../src/engine/events/engine-events.ts";
import type { EngineEventMap } from "../../src/engine/events/event-map.ts";
import type { AttemptResult } from "../../src/engine/executor/attempt-result.ts";

const repo = resolve(import.meta.dirname, "../..");
let dir: string;
let file: string;
let version: string;
let pool: TaskHostPool | null = null;
let nextId = 1;

beforeEach(async () => {
  mkdirSync(join(repo, ".tmp"), { recursive: true });
  dir = mkdtempSync(join(repo, ".tmp", "pool-"));
  file = join(dir, "p.ts");
  writeFileSync(file, `import { existsSync } from "node:fs";
import { pipeline } from "idem";
console.log("p.ts imported by " + process.pid);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const p = pipeline("p", {}, {
  instant: { run: () => ({ pid: process.pid }) },
  medium: { run: async () => { await sleep(300); return { pid: process.pid }; } },
  // Runs until the test lets it end (it writes the file "release").
  slow: { run: async () => { while (!existsSync(${JSON.stringify(join(dir, "release"))})) await sleep(20); return { pid: process.pid }; } },
  // The same without ever yielding its event loop: a busy loop.
  spin: { run: () => { while (!existsSync(${JSON.stringify(join(dir, "release"))})); return { pid: process.pid }; } },
  die: { run: () => process.exit(3) },
});
`);
  version = ((await importTypeScript(file, dir)).p as { version: string }).version;
});

afterEach(async () => {
  await pool?.close();
  pool = null;
  rmSync(dir, { recursive: true, force: true });
});

function newPool(size: number, idleHostMs?: number, events?: EngineEvents): TaskHostPool {
  pool = new TaskHostPool({ size, cwd: dir, logMaxBytes: null, secrets: [], preload: () => [file], ...(idleHostMs ? { idleHostMs } : {}), ...(events ? { events } : {}) });
  return pool;
}

function call(taskId: "instant" | "medium" | "slow" | "spin" | "die"): Promise<AttemptResult> {
  const attemptId = nextId++;
  return pool!.call({
    file, version,
    claim: {
      codeVersion: null, attemptId, runId: "p@2026-09-01", pipelineId: "p", taskId, tryNumber: 1, maxTries: 1, intervalStart: Date.UTC(2026, 8, 1),
      intervalEnd: Date.UTC(2026, 8, 2), businessDate: "2026-09-01", graphVersion: version, params: {}, logPath: join(dir, `${attemptId}.log`),
      leaseExpiresAt: 0, firstStartedAt: 0, trigger: "manual", backfillId: null, readySince: null, mapKey: null, mapItem: null,
    },
    projectFrozen: [], watermarks: { get: async () => null, save: async () => {} }, connections: {}, upstream: {}, traceparent: null, projectDir: dir,
    timeoutMs: null, graceMs: 1_000,
  });
}

const release = () => writeFileSync(join(dir, "release"), "");

const pidOf = (result: AttemptResult) => {
  if (result.outcome !== "success") throw new Error(`the attempt did not succeed: ${JSON.stringify(result)}`);
  return (result.summary as { pid: number }).pid;
};

/** A pool of `size` whose first host is up (it answered one attempt). */
async function warmPool(size: number, idleHostMs?: number): Promise<TaskHostPool> {
  const p = newPool(size, idleHostMs);
  pidOf(await call("instant"));
  expect(p.size).toBe(1);
  return p;
}

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("how many task hosts a pool starts", () => {
  it("tells each host that starts and exits: one that dies under its task unexpectedly, one it stops on close as expected", async () => {
    const events = new EngineEvents();
    const started: EngineEventMap["host:started"][] = [];
    const exited: EngineEventMap["host:exited"][] = [];
    events.on("host:started", (h) => started.push(h));
    events.on("host:exited", (h) => exited.push(h));
    const output: EngineEventMap["host:output"][] = [];
    events.on("host:output", (o) => output.push(o));
    const p = newPool(1, undefined, events);
    // A host imports the file when it starts, outside any attempt: what it prints then is told.
    p.warm(1);
    for (const deadline = Date.now() + 10_000; output.length === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 20));
    expect(output).toEqual([{ pid: started[0]!.pid, text: `p.ts imported by ${started[0]!.pid}\n` }]);
    expect(await call("die")).toMatchObject({ outcome: "failed", errorClass: "TaskCrashed" });
    expect(exited).toEqual([expect.objectContaining({ pid: started[0]!.pid, expected: false, hosts: 0 })]);
    expect(await call("instant")).toMatchObject({ outcome: "success" });
    expect(started).toHaveLength(2);
    expect(p.status()).toMatchObject({ part: "task-hosts", state: { kind: "open" }, hosts: 1, busy: 0, pending: 0 });
    await p.close();
    expect(exited.slice(1)).toEqual([expect.objectContaining({ pid: started[1]!.pid, expected: true })]);
    expect(p.status()).toMatchObject({ state: { kind: "closed" } });
  });

  it("gives a burst of instant attempts to the host it has, one running and four in its list, and starts no other", async () => {
    const p = await warmPool(4);
    const results = await Promise.all(Array.from({ length: 5 }, () => call("instant")));
    expect(new Set(results.map(pidOf)).size).toBe(1);
    expect(p.size).toBe(1);
  });

  it("runs a long burst of instant attempts on the one host it has, however long they wait for it", async () => {
    const p = await warmPool(4);
    const results = await Promise.all(Array.from({ length: 200 }, () => call("instant")));
    expect(new Set(results.map(pidOf)).size).toBe(1);
    expect(p.size).toBe(1);
  });

  it("starts another host at once for attempts waiting behind one that has run 50 ms, so they end while it runs", async () => {
    const p = await warmPool(4);
    const slow = call("slow");
    await new Promise((r) => setTimeout(r, 10)); // the slow one runs, the next two wait in its host's list
    // They end while the slow one still runs (it runs until they have).
    const quickResults = await Promise.all([call("instant"), call("instant")]);
    release();
    expect(quickResults.map(pidOf)).not.toContain(pidOf(await slow));
    expect(p.size).toBe(3); // one for each attempt taken back
  });

  it("starts hosts for the attempts it holds while a busy loop keeps its host from answering", async () => {
    const p = await warmPool(4);
    const spin = call("spin");
    await new Promise((r) => setTimeout(r, 10));
    // Given to the spinning host's list: it cannot be withdrawn (the host reads no message) and
    // runs when the loop ends, as a host's list always did.
    const stuck = call("instant");
    await new Promise((r) => setTimeout(r, 10));
    // Held by the pool: the spinning host gains CPU while they wait, so they get other hosts.
    const quickResults = await Promise.all(Array.from({ length: 3 }, () => call("instant")));
    release();
    const spinPid = pidOf(await spin);
    expect(quickResults.map(pidOf)).not.toContain(spinPid);
    expect(pidOf(await stuck)).toBe(spinPid);
    expect(p.size).toBeGreaterThan(1);
  });

  it("starts the first host of a new version of the pipelines at once", async () => {
    const p = await warmPool(4);
    const slow = call("slow");
    await new Promise((r) => setTimeout(r, 10));
    p.retire(); // the running host leaves after its attempt; none of the new version is up
    pidOf(await call("instant"));
    expect(p.size).toBe(2);
    release();
    pidOf(await slow);
  });

  it("starts hosts, up to its size, for attempts that have waited for one", async () => {
    const p = await warmPool(4);
    // One runs and four wait in the first host; the other seven wait in the pool, then get hosts.
    const results = await Promise.all(Array.from({ length: 12 }, () => call("medium")));
    expect(p.size).toBe(4);
    // Those that came up first took the waiting ones in their lists: at least one other ran some.
    expect(new Set(results.map(pidOf)).size).toBeGreaterThan(1);
  });

  it("retires a host beyond the first once it has been idle for idleHostMs, and keeps the first", async () => {
    const p = await warmPool(4, 300);
    const slow = call("slow");
    await new Promise((r) => setTimeout(r, 10));
    const quick = await call("instant"); // taken from behind the slow one to a second host
    expect(p.size).toBe(2);
    release();
    expect(pidOf(quick)).not.toBe(pidOf(await slow));
    await until("the idle host to leave", () => p.size === 1);
    await new Promise((r) => setTimeout(r, 600));
    expect(p.size).toBe(1);
    pidOf(await call("instant"));
  });
});
