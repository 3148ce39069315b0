import { readdirSync, readFileSync } from "node:fs";
import { expect, it } from "vitest";
import type { AttemptFinish, ClaimedAttempt, RunRecord, Store } from "../../../src/store/port.ts";
import { newRun, tasksOf } from "../../support/shapes.ts";

export const T0 = Date.parse("2026-09-02T02:00:00Z");
/** The folder claims name for attempt logs: the store records `<LOG_DIR>/<run>/<task>/try-<n>.log`. */
export const LOG_DIR = "/logs";

/** What every role's part of the contract suite shares: the store under test and a few shapes. */
export interface Harness {
  /** Stands for the current test's store (fresh and migrated for each test), recording which methods it is asked for. */
  readonly store: Store;
  /** The adapter has channels of its own (watchWork, watchChanges, watchScheduling); without, it leaves them out. */
  readonly channels: boolean;
  /** a -> b -> c, and a -> d: the graph most tests use. */
  saveGraph(version?: string, edges?: [string, string][]): Promise<[string, string][]>;
  claim(limit?: number, now?: number, runId?: string, workerId?: string): Promise<ClaimedAttempt[]>;
  finish(attempt: ClaimedAttempt, overrides?: Partial<AttemptFinish>): AttemptFinish;
  states(runId?: string): Promise<Record<string, string>>;
  createStandardRun(overrides?: Parameters<typeof tasksOf>[2]): ReturnType<Store["createRunIfAbsent"]>;
  /** A two-task scheduled run of graph "flat" for `day`, ended (success) at `at`. */
  endedRun(day: string, at: number): Promise<RunRecord>;
  /** The schedule restating that run: the interval asking for it fired at `endedBefore`. */
  restate(day: string, at: number, endedBefore: number, taskIds?: string[]): ReturnType<Store["rerun"]>;
}

export function contractHarness(current: () => Store, channels: boolean): Harness {
  const flat = () => tasksOf(["a", "b"]);
  // One object for the whole suite that stands for whichever store the running test has.
  const store = new Proxy({} as Store, { get: (_, property) => Reflect.get(current(), property) as unknown });
  const h: Harness = {
    store,
    channels,
    async saveGraph(version = "v1", edges = [["a", "b"], ["b", "c"], ["a", "d"]]) {
      await h.store.savePipelineVersion({
        pipelineId: "p",
        version,
        definition: { edges },
        edges: edges.map(([parent, child]) => ({ parent, child })),
        createdAt: T0,
      });
      return edges;
    },
    claim(limit = 10, now = T0, runId, workerId = "w1") {
      return h.store.claimReady({ workerId, pid: 123, limit, now, leaseMs: 30_000, runId, logDir: LOG_DIR });
    },
    finish(attempt, overrides = {}) {
      return {
        attemptId: attempt.attemptId,
        workerId: "w1",
        now: T0 + 1_000,
        outcome: "success",
        retryable: true,
        retryAt: null,
        exitCode: null,
        errorClass: null,
        errorMessage: null,
        summary: null,
        skipReason: null,
        ...overrides,
      };
    },
    async states(runId = "p@2026-09-01") {
      return Object.fromEntries((await h.store.listTaskInstances(runId)).map((t) => [t.taskId, t.state]));
    },
    async createStandardRun(overrides = {}) {
      const edges = await h.saveGraph();
      return h.store.createRunIfAbsent(newRun({ tasks: tasksOf(["a", "b", "c", "d"], edges, overrides) }));
    },
    async endedRun(day, at) {
      await h.saveGraph("flat", []);
      await h.store.createRunIfAbsent(newRun({ runId: `p@${day}`, businessDate: day, graphVersion: "flat", trigger: "schedule", tasks: flat() }));
      for (const a of await h.claim(10, at, `p@${day}`)) await h.store.finishAttempt(h.finish(a, { now: at }));
      return (await h.store.getRun(`p@${day}`))!;
    },
    restate(day, at, endedBefore, taskIds) {
      return h.store.rerun({
        runId: `p@${day}`, graphVersion: "flat", tasks: flat(), taskIds, params: {}, at,
        restate: { triggeredBy: "scheduler", reason: "trailing window", endedBefore },
      });
    },
  };
  return h;
}

/**
 * The two sides of an optional channel method (`watchWork`, ...): with channels, its callback is
 * called soon after `change` commits, and not after it is stopped; without, the adapter leaves it
 * out (the engine then watches a file in the state directory).
 */
export function describeChannel(h: Harness, method: "watchWork" | "watchChanges" | "watchScheduling", change: string, make: () => Promise<unknown>): void {
  it.runIf(h.channels)(`calls ${method}'s callback soon after ${change}`, async () => {
    let heard = 0;
    const stop = await h.store[method]!(() => heard++);
    try {
      await make();
      await until(() => heard > 0, `${method}'s callback after ${change}`);
    } finally {
      await stop();
    }
  });

  it.skipIf(h.channels)(`leaves ${method} out: without a channel the engine watches a file instead`, () => {
    expect(h.store[method]).toBeUndefined();
  });
}

/** Waits (at most `ms`) until `condition` holds; fails saying what it waited for. */
export async function until(condition: () => boolean, what: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`waited ${ms} ms for ${what}; it did not come`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The port's roles as written in `src/store/port/`: each role interface and its method names. */
export function portRoles(): Map<string, string[]> {
  const dir = new URL("../../../src/store/port/", import.meta.url);
  const roles = new Map<string, string[]>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
    const text = readFileSync(new URL(file, dir), "utf8");
    for (const block of text.matchAll(/^export interface (\w+) \{\n([\s\S]*?)^\}/gm)) {
      const methods = [...block[2]!.matchAll(/^ {2}(\w+)\??\(/gm)].map((m) => m[1]!);
      if (methods.length > 0) roles.set(block[1]!, methods);
    }
  }
  return roles;
}

/** The role interfaces `Store` extends in `src/store/port.ts`; fails if it declares methods of its own beyond migrate and close. */
export function storeRoles(): string[] {
  const text = readFileSync(new URL("../../../src/store/port.ts", import.meta.url), "utf8");
  const [, extended, body] = /^export interface Store\s+extends([^{]+)\{\n([\s\S]*?)^\}/m.exec(text) ?? [];
  const own = [...(body ?? "").matchAll(/^ {2}(\w+)\??\(/gm)].map((m) => m[1]);
  expect(own).toEqual(["migrate", "close"]);
  return (extended ?? "").split(",").map((name) => name.trim());
}

/**
 * Wraps a store so that every port method asked for is noted with the role block of the
 * contract suite the current test belongs to: how the suite proves each role's block calls
 * every method of its role.
 */
export function recording(store: Store, roles: ReadonlyMap<string, readonly string[]>, seen: Set<string>): Store {
  const methods = new Set([...roles.values()].flat());
  return new Proxy(store, {
    get(target, property, receiver) {
      if (typeof property === "string" && methods.has(property)) {
        const block = (expect.getState().currentTestName ?? "").split(" > ").find((name) => roles.has(name));
        if (block) seen.add(`${block}.${property}`);
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
