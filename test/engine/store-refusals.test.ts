import { afterEach, describe, expect, it } from "vitest";
import { ConflictError, NotFoundError } from "../../src/core/model/errors.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { engineErrorOf } from "../../src/engine/records/store-refusals.ts";
import { StoreConflictError } from "../../src/store/port.ts";
import { FakeClock } from "../../src/testing.ts";
import { openTestEngine, type TestEngine } from "../support/engine.ts";

let t: TestEngine | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe("a store's refusal, in the engine's own errors", () => {
  it("names what does not exist (404 / exit 2), and calls anything else a conflict (409 / exit 2)", () => {
    const missingRun = engineErrorOf(new StoreConflictError("no run p@2026-09-01"));
    expect(missingRun).toBeInstanceOf(NotFoundError);
    expect([(missingRun as NotFoundError).what, (missingRun as Error).message]).toEqual(["run", "unknown run p@2026-09-01"]);
    const missingBackfill = engineErrorOf(new StoreConflictError("no backfill bf_1"), { pipeline: "p" });
    expect([(missingBackfill as NotFoundError).what, (missingBackfill as Error).message]).toEqual(["backfill", "pipeline p: unknown backfill bf_1"]);
    expect((engineErrorOf(new StoreConflictError("run r has no task t")) as NotFoundError).what).toBe("task");
    const busy = engineErrorOf(new StoreConflictError('a token named "ci" exists; revoke it first'));
    expect(busy).toBeInstanceOf(ConflictError);
    expect(busy).not.toBeInstanceOf(NotFoundError);
    const other = new Error("disk full");
    expect(engineErrorOf(other)).toBe(other);
  });

  it("a skip, a mark or a clear of a task that is running is a conflict; a task the run lacks is not found", async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const p = pipeline("p", { schedule: daily({ at: "02:00" }), start: "2026-09-01" }, {
      slow: { run: async () => { started(); await gate; } },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-05T00:00:00Z"));
    const { engine } = t;
    const run = engine.runForDate("p", "2026-09-01");
    await running;
    // Settled together: awaiting one while the others reject unobserved is an unhandled rejection.
    const refusals = await Promise.allSettled([
      engine.skip("p@2026-09-01", "slow", { reason: "r" }),
      engine.mark("p@2026-09-01", "slow", { state: "success", reason: "r" }),
      engine.clear("p@2026-09-01", { reason: "r" }),
    ]);
    expect(refusals.map((r) => r.status === "rejected" && r.reason instanceof ConflictError)).toEqual([true, true, true]);
    await expect(engine.skip("p@2026-09-01", "slow", { reason: "r" })).rejects.toThrow("task slow of run p@2026-09-01 is running; wait for it to end");
    const unknown = await engine.skip("p@2026-09-01", "nope", { reason: "r" }).catch((error: unknown) => error);
    expect([unknown instanceof NotFoundError && unknown.what, (unknown as Error).message]).toEqual(["task", "run p@2026-09-01 has no task nope"]);
    release();
    expect((await run).run.state).toBe("success");
  });
});
