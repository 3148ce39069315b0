import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EXTERNAL_KEY_MAX_LENGTH, externalDeadline, externalJobKey, nextPollAt, remoteLogTail } from "../../../src/core/policy/external-job.ts";

const name = fc.string({ minLength: 1, maxLength: 80 });
const input = fc.record({
  pipelineId: name,
  businessDate: fc.date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
  taskId: name,
  mapKey: fc.option(name, { nil: null }),
  submission: fc.integer({ min: 1, max: 1_000 }),
});

describe("externalJobKey", () => {
  it("is a pure function of the submission: the same inputs give the same key, safe for a job name and at most 64 characters", () => {
    fc.assert(fc.property(input, (i) => {
      const key = externalJobKey(i);
      expect(externalJobKey({ ...i })).toBe(key);
      expect(key.length).toBeLessThanOrEqual(EXTERNAL_KEY_MAX_LENGTH);
      expect(key).toMatch(/^idem-[A-Za-z0-9_.-]+$/);
    }));
  });

  it("differs when anything naming the submission differs, however long or odd the names", () => {
    fc.assert(fc.property(input, input, (a, b) => {
      const same = a.pipelineId === b.pipelineId && a.businessDate === b.businessDate && a.taskId === b.taskId && a.mapKey === b.mapKey && a.submission === b.submission;
      expect(externalJobKey(a) === externalJobKey(b)).toBe(same);
    }));
    fc.assert(fc.property(input, fc.integer({ min: 1, max: 1_000 }), (i, other) => {
      fc.pre(other !== i.submission);
      expect(externalJobKey({ ...i, submission: other })).not.toBe(externalJobKey(i));
    }));
  });

  it("reads as what it names, and treats a missing map key as none", () => {
    const key = externalJobKey({ pipelineId: "sales", businessDate: "2026-09-01", taskId: "transform", submission: 2 });
    expect(key).toMatch(/^idem-sales\.transform-20260901-s2-[0-9a-f]{16}$/);
    expect(externalJobKey({ pipelineId: "sales", businessDate: "2026-09-01", taskId: "transform", mapKey: null, submission: 2 })).toBe(key);
    expect(() => externalJobKey({ pipelineId: "p", businessDate: "2026-09-01", taskId: "t", submission: 0 })).toThrow(/submission/);
  });
});

describe("nextPollAt", () => {
  const policy = fc.record({ pollIntervalMs: fc.integer({ min: 1, max: 3_600_000 }), pollBackoff: fc.boolean(), maxPollIntervalMs: fc.integer({ min: 0, max: 86_400_000 }), holdPoolWhileRemote: fc.boolean() });
  it("waits at least the interval, at most the larger of interval and cap, and never past the deadline (but not before now)", () => {
    fc.assert(fc.property(policy, fc.nat(10_000_000), fc.nat(10_000_000), fc.option(fc.nat(30_000_000), { nil: null }), (p, submittedAt, ran, timeout) => {
      const now = submittedAt + ran;
      const deadline = externalDeadline(timeout, submittedAt);
      const at = nextPollAt(p, submittedAt, now, deadline);
      expect(at).toBeGreaterThanOrEqual(now);
      if (deadline !== null) expect(at).toBeLessThanOrEqual(Math.max(now, deadline));
      if (deadline === null || deadline >= now + Math.max(p.pollIntervalMs, p.maxPollIntervalMs)) {
        expect(at - now).toBeGreaterThanOrEqual(p.pollIntervalMs);
        expect(at - now).toBeLessThanOrEqual(Math.max(p.pollIntervalMs, p.maxPollIntervalMs));
        if (!p.pollBackoff) expect(at - now).toBe(p.pollIntervalMs);
      }
    }));
  });
});

describe("remoteLogTail", () => {
  it("keeps a short log whole, and the last lines of a long one within the cap plus its note", () => {
    expect(remoteLogTail("a\nb\n", 100)).toBe("a\nb\n");
    const long = Array.from({ length: 1_000 }, (_, i) => `line ${i}`).join("\n");
    const tail = remoteLogTail(long, 100);
    expect(tail.startsWith("[")).toBe(true);
    expect(tail.endsWith("line 999")).toBe(true);
    expect(Buffer.byteLength(tail.slice(tail.indexOf("\n") + 1))).toBeLessThanOrEqual(100);
  });
});
