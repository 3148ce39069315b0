import { eventsLoggedTo } from "../support/events.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/core/model/clock.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { saveVersion } from "../../src/engine/records/pipeline-records.ts";
import { Worker } from "../../src/engine/worker/worker.ts";
import type { Store } from "../../src/store/port.ts";
import { newRun, tasksOf } from "../support/shapes.ts";
import { openTestStore } from "../support/test-store.ts";

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/**
 * The store, but gone (as if the server were) when the worker records a result: `finishAndClaim`
 * fails, and so does `finishAttempt`, which the worker falls back to, for its first `failures` calls.
 */
function finishFailing(store: Store, failures: number): { store: Store; triedAt: number[] } {
  const triedAt: number[] = [];
  const proxy = new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (property === "finishAndClaim") return async () => { throw new Error("Connection terminated unexpectedly"); };
      if (property !== "finishAttempt") return typeof value === "function" ? value.bind(target) : value;
      return async (...args: Parameters<Store["finishAttempt"]>) => {
        triedAt.push(Date.now());
        if (triedAt.length <= failures) throw new Error("Connection terminated unexpectedly");
        return target.finishAttempt(...args);
      };
    },
  }) as Store;
  return { store: proxy, triedAt };
}

async function workOne(failures: number, leaseMs: number) {
  const dir = mkdtempSync(join(tmpdir(), "idem-worker-outage-"));
  const opened = await openTestStore(dir);
  cleanup.push(async () => {
    await opened.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const p = pipeline("p", {}, { a: { run: () => {} } });
  await saveVersion(opened.store, p, Date.now(), "test");
  await opened.store.createRunIfAbsent(newRun({ graphVersion: p.version, tasks: tasksOf(["a"]), createdAt: Date.now() }));
  const failing = finishFailing(opened.store, failures);
  const logs: string[] = [];
  const worker = new Worker({ store: failing.store, clock: systemClock, pipelines: [p], stateDir: dir, workerId: "w1", concurrency: 1, pollMs: 20, leaseMs, events: eventsLoggedTo(logs) });
  const stop = new AbortController();
  const running = worker.run(stop.signal);
  const deadline = Date.now() + 10_000;
  while (failing.triedAt.length <= failures && !logs.some((l) => l.includes("giving up"))) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${failing.triedAt.length} finish tries, log: ${logs.join(" | ")}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  stop.abort();
  await running;
  return { store: opened.store, triedAt: failing.triedAt, logs };
}

describe("a worker whose state store is out of reach when an attempt ends", () => {
  it("tries to record the result again, pausing 10 ms doubling, and records it once the store answers", async () => {
    const { store, triedAt, logs } = await workOne(4, 30_000);
    expect(triedAt).toHaveLength(5);
    const pauses = triedAt.slice(1).map((at, i) => at - triedAt[i]!);
    // 10, 20, 40, 80 ms at least (timers never fire early); slower under load, never faster.
    [10, 20, 40, 80].forEach((least, i) => expect(pauses[i]).toBeGreaterThanOrEqual(least - 1));
    expect((await store.listTaskInstances("p@2026-09-01"))[0]!.state).toBe("success");
    expect(logs.filter((l) => l.includes("giving up"))).toEqual([]);
  });

  it("gives up after one lease's time, says so, and leaves the attempt to expire", async () => {
    const { store, triedAt, logs } = await workOne(1_000, 600);
    expect(triedAt.at(-1)! - triedAt[0]!).toBeLessThanOrEqual(600);
    expect(triedAt.length).toBeGreaterThanOrEqual(5);
    expect(logs.find((l) => l.includes("giving up"))).toMatch(/^record p@2026-09-01 a failed, giving up: Connection terminated unexpectedly$/);
    expect((await store.listTaskInstances("p@2026-09-01"))[0]!.state).toBe("running");
  });
});
