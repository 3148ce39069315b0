import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareClaimOrder, holderKey, planClaim, withRemoteHolds, type ClaimCandidate, type ClaimCounts, type ClaimPolicy } from "../../../src/core/policy/claim-plan.ts";
import type { TaskState } from "../../../src/core/model/states.ts";

const RUNS = { numRuns: Number(process.env.IDEM_FC_RUNS ?? 300) };
const PIPELINES = ["p1", "p2", "p3"];
const POOLS = { db: 3, api: 1 } as const;

const candidate: fc.Arbitrary<ClaimCandidate> = fc.record({
  taskId: fc.stringMatching(/^[a-e][0-9]$/),
  pipelineId: fc.constantFrom(...PIPELINES),
  pool: fc.constantFrom<string | null>(null, null, "db", "api", "gone"),
  slots: fc.integer({ min: 1, max: 4 }),
  priority: fc.integer({ min: 0, max: 3 }),
  waitedSince: fc.option(fc.integer({ min: 0, max: 200_000 }), { nil: null }),
  due: fc.boolean(),
  background: fc.boolean(),
});

const policy: fc.Arbitrary<ClaimPolicy> = fc.record(
  {
    limit: fc.integer({ min: 0, max: 12 }),
    now: fc.constant(200_000),
    parallelism: fc.integer({ min: 0, max: 10 }),
    maxActiveTasks: fc.dictionary(fc.constantFrom(...PIPELINES), fc.integer({ min: 0, max: 4 })),
    starvationMs: fc.integer({ min: 0, max: 120_000 }),
    pipelineIds: fc.subarray(PIPELINES),
  },
  { requiredKeys: ["limit", "now"] },
);

const counts: fc.Arbitrary<ClaimCounts> = fc
  .record({
    running: fc.integer({ min: 0, max: 8 }),
    byPipeline: fc.tuple(...PIPELINES.map(() => fc.integer({ min: 0, max: 4 }))),
    db: fc.integer({ min: 0, max: POOLS.db }),
    api: fc.integer({ min: 0, max: POOLS.api }),
  })
  .map((c) => ({
    running: c.running,
    runningByPipeline: new Map(PIPELINES.map((p, i) => [p, c.byPipeline[i]!])),
    pools: new Map([
      ["db", { slots: POOLS.db, used: c.db }],
      ["api", { slots: POOLS.api, used: c.api }],
    ]),
  }));

/** Two candidates that take the same resources: whatever let one in would let the other in. */
const sameNeeds = (a: ClaimCandidate, b: ClaimCandidate) => a.pipelineId === b.pipelineId && a.pool === b.pool && a.slots === b.slots;

describe("claim plan", () => {
  it("never exceeds the limit, parallelism, a pipeline's cap or a pool's slots, and claims only what the worker has loaded", () => {
    fc.assert(
      fc.property(fc.array(candidate, { maxLength: 30 }), policy, counts, (candidates, limits, now) => {
        const { chosen } = planClaim(candidates, limits, now);
        expect(chosen.length).toBeLessThanOrEqual(limits.limit);
        if (limits.parallelism !== undefined) expect(chosen.length).toBeLessThanOrEqual(Math.max(0, limits.parallelism - now.running));
        for (const p of PIPELINES) {
          const cap = limits.maxActiveTasks?.[p];
          const taken = chosen.filter((c) => c.pipelineId === p).length;
          if (cap !== undefined) expect(taken).toBeLessThanOrEqual(Math.max(0, cap - now.runningByPipeline.get(p)!));
          if (limits.pipelineIds && !limits.pipelineIds.includes(p)) expect(taken).toBe(0);
        }
        for (const [name, pool] of now.pools) {
          const used = chosen.filter((c) => c.pool === name).reduce((sum, c) => sum + c.slots, 0);
          expect(pool.used + used).toBeLessThanOrEqual(pool.slots);
        }
        expect(chosen.some((c) => c.pool === "gone")).toBe(false);
      }),
      RUNS,
    );
  });

  it("serves live runs before background work and higher priority first: nothing is passed over for a later candidate that needs the same", () => {
    fc.assert(
      fc.property(fc.array(candidate, { maxLength: 30 }), policy, counts, (candidates, limits, now) => {
        const { chosen } = planClaim(candidates, limits, now);
        const taken = new Set(chosen);
        for (const x of chosen) {
          for (const y of candidates) {
            if (taken.has(y) || !sameNeeds(x, y) || x.due !== y.due) continue;
            expect(!x.background || y.background, `background ${x.taskId} claimed while live ${y.taskId} waits`).toBe(true);
            if (x.background === y.background && !x.due) expect(y.priority, `${x.taskId} claimed before ${y.taskId}`).toBeLessThanOrEqual(x.priority);
          }
        }
        // Claimed in claim order, whatever order the store read them in.
        expect([...chosen].sort(compareClaimOrder)).toEqual(chosen);
      }),
      RUNS,
    );
  });

  it("with nothing in the way, claims the first candidates in claim order: due retries, then live by priority and age, then background", () => {
    const c = (taskId: string, rest: Partial<ClaimCandidate>): ClaimCandidate => ({
      taskId, pipelineId: "p1", pool: null, slots: 1, priority: 0, waitedSince: 0, due: false, background: false, ...rest,
    });
    const candidates = [
      c("bg-high", { background: true, priority: 9 }),
      c("live-old", { waitedSince: 1 }),
      c("live-high", { priority: 5, waitedSince: 9 }),
      c("retry-bg", { due: true, background: true }),
      c("retry", { due: true, waitedSince: 5 }),
    ];
    const plan = planClaim(candidates, { limit: 4, now: 10 }, { running: 0, runningByPipeline: new Map(), pools: new Map() });
    expect(plan.chosen.map((x) => x.taskId)).toEqual(["retry", "retry-bg", "live-high", "live-old"]);
    expect(plan.unconsidered).toBe(1);
    expect(plan.passedOver).toBe(false);
  });

  it("lets a candidate that waited past starvationMs reserve its pool: nobody after it takes the slots", () => {
    const c = (taskId: string, slots: number, waitedSince: number): ClaimCandidate => ({
      taskId, pipelineId: "p1", pool: "db", slots, priority: 0, waitedSince, due: false, background: false,
    });
    const counts = { running: 1, runningByPipeline: new Map(), pools: new Map([["db", { slots: 3, used: 1 }]]) };
    const big = c("big", 3, 0);
    const small = c("small", 1, 50);
    expect(planClaim([big, small], { limit: 5, now: 100, starvationMs: 200 }, counts).chosen).toEqual([small]);
    const starved = planClaim([big, small], { limit: 5, now: 100, starvationMs: 100 }, counts);
    expect(starved.chosen).toEqual([]);
    expect(starved.passedOver).toBe(true);
  });
});

describe("remote jobs in pools", () => {
  const holder = fc.record({
    runId: fc.constantFrom("r1", "r2"),
    taskId: fc.stringMatching(/^[a-e][0-9]$/),
    pool: fc.constantFrom("db", "api", "gone"),
    slots: fc.integer({ min: 0, max: 3 }),
    jobState: fc.constantFrom("open", "open", "cancel_requested", "succeeded", "failed", "cancelled"),
    taskState: fc.constantFrom<TaskState>("queued", "running", "up_for_retry", "up_for_reschedule", "success", "failed", "skipped"),
  });

  it("a job holds slots only while open, holding some, and its task instance is live; a running one is counted once, as running", () => {
    fc.assert(
      fc.property(fc.uniqueArray(holder, { selector: (h) => `${h.runId}/${h.taskId}` }), fc.nat(3), (holders, dbRunning) => {
        const { pools, heldRemotely } = withRemoteHolds(new Map([["db", { slots: 9, used: dbRunning }]]), holders);
        const holding = holders.filter((h) => h.jobState === "open" && h.slots > 0 && !["success", "failed", "skipped"].includes(h.taskState));
        expect([...heldRemotely].sort()).toEqual(holding.map((h) => holderKey(h.runId, h.taskId)).sort());
        const waiting = holding.filter((h) => h.pool === "db" && h.taskState !== "running").reduce((n, h) => n + h.slots, 0);
        expect(pools.get("db")!.used).toBe(dbRunning + waiting);
        expect(pools.has("gone")).toBe(false);
      }),
      RUNS,
    );
  });

  it("a candidate whose job holds its slots is claimed into a full or reserved pool, and takes none of its slots", () => {
    fc.assert(
      fc.property(fc.array(candidate, { maxLength: 20 }), counts, (others, now) => {
        const poll: ClaimCandidate = { taskId: "poll", pipelineId: "p1", pool: "api", slots: 1, priority: 0, waitedSince: 0, due: true, background: false, heldRemotely: true };
        const full = { ...now, pools: new Map([...now.pools].map(([name, p]) => [name, { slots: p.slots, used: p.slots }])) };
        const { chosen } = planClaim([...others, poll], { limit: 100, now: 200_000, starvationMs: 0 }, full);
        expect(chosen).toContain(poll);
        // Nothing else entered the full pools.
        expect(chosen.filter((c) => c !== poll && c.pool !== null && !c.heldRemotely)).toEqual([]);
      }),
      RUNS,
    );
  });
});
