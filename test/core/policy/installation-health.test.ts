import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { healthVerdict, type HealthFacts } from "../../../src/core/policy/installation-health.ts";

const RUNS = { numRuns: Number(process.env.IDEM_FC_RUNS ?? 300) };

const reachable: fc.Arbitrary<HealthFacts> = fc.record({
  reachable: fc.constant(true as const),
  checker: fc.record({ status: fc.constantFrom("ok" as const, "stale" as const, "none" as const), message: fc.constantFrom("checker run by w1", "never ran") }),
  schedulerLive: fc.boolean(),
  brokenFiles: fc.nat(3),
});

describe("healthVerdict: one answer for every surface", () => {
  it("is healthy exactly when the checker passes, a scheduler leads and every file loads; anything else names the first problem", () => {
    fc.assert(
      fc.property(reachable, (facts) => {
        if (!facts.reachable) return;
        const verdict = healthVerdict(facts);
        expect(verdict.healthy).toBe(facts.checker.status === "ok" && facts.schedulerLive && facts.brokenFiles === 0);
        expect(verdict.healthy).toBe(verdict.status === "ok");
        // Nobody checking the promises comes first (no alert can go out), then no scheduler, then files.
        const first = facts.checker.status !== "ok" ? facts.checker.status : !facts.schedulerLive ? "no_scheduler" : facts.brokenFiles ? "degraded" : "ok";
        expect(verdict.status).toBe(first);
        expect(verdict.message.startsWith(facts.checker.message)).toBe(true);
        expect(verdict.message.endsWith("did not load")).toBe(facts.brokenFiles > 0);
      }),
      RUNS,
    );
  });

  it("a store that cannot be read is unhealthy, and says why", () => {
    expect(healthVerdict({ reachable: false, storeError: "the state store did not answer within 5 s" })).toEqual({
      status: "unreachable", healthy: false, message: "the state store did not answer within 5 s",
    });
  });
});
