import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  auditActionOf, decideIncidentAction, incidentState, reopenDue, type IncidentAction, type IncidentStatus,
} from "../../../src/core/policy/incident-lifecycle.ts";

const fresh: IncidentStatus = { acknowledgement: null, resolvedAt: null, resolvedBy: null };

const action: fc.Arbitrary<IncidentAction> = fc.oneof(
  fc.record({
    kind: fc.constant("acknowledge" as const),
    actor: fc.constantFrom("ana", "bo"),
    reason: fc.constantFrom("looking", "", "  ", "known outage"),
    until: fc.option(fc.integer({ min: 0, max: 200 }), { nil: null }),
  }),
  fc.record({ kind: fc.constant("resolve" as const), actor: fc.constantFrom("ana", "bo"), reason: fc.constantFrom("fixed", "", "dup") }),
);

/** A person's actions at increasing times, with idem resolving the incident (its cause ended) at some point or never. */
const history = fc.record({
  steps: fc.array(fc.record({ action, gap: fc.integer({ min: 0, max: 50 }) }), { maxLength: 12 }),
  causeEndsAt: fc.option(fc.integer({ min: 0, max: 400 }), { nil: null }),
});

/** Plays the history as a store would: each action decided at its time, idem's resolution when the cause ends. */
function play(h: { steps: { action: IncidentAction; gap: number }[]; causeEndsAt: number | null }) {
  let status: IncidentStatus = fresh;
  let now = 0;
  const log: { at: number; action: IncidentAction; before: IncidentStatus; refusal?: string; after: IncidentStatus }[] = [];
  for (const step of h.steps) {
    now += step.gap;
    if (h.causeEndsAt !== null && now >= h.causeEndsAt && status.resolvedAt === null) {
      status = { ...status, resolvedAt: h.causeEndsAt, resolvedBy: "watchdog" };
    }
    const before = status;
    const decision = decideIncidentAction("k", status, step.action, now);
    if (decision.acknowledgement) status = { ...status, acknowledgement: decision.acknowledgement };
    if (decision.resolved) status = { ...status, resolvedAt: decision.resolved.at, resolvedBy: decision.resolved.by };
    log.push({ at: now, action: step.action, before, after: status, ...(decision.refusal ? { refusal: decision.refusal } : {}) });
  }
  return log;
}

describe("incident lifecycle", () => {
  it("open, then acknowledged, then resolved by a person, each with who and why", () => {
    const ack = decideIncidentAction("k", fresh, { kind: "acknowledge", actor: "ana", reason: "looking", until: null }, 10);
    expect(ack).toEqual({ acknowledgement: { at: 10, by: "ana", reason: "looking", until: null } });
    const acked = { ...fresh, acknowledgement: ack.acknowledgement! };
    expect(incidentState(acked, 1e12)).toBe("acknowledged");
    const resolved = decideIncidentAction("k", acked, { kind: "resolve", actor: "bo", reason: " fixed upstream " }, 20);
    expect(resolved).toEqual({ resolved: { at: 20, by: "bo", resolution: "fixed upstream" } });
  });

  it("a snooze lapses at its end: the incident is open again", () => {
    const snooze = decideIncidentAction("k", fresh, { kind: "acknowledge", actor: "ana", reason: "tomorrow", until: 100 }, 10);
    const status = { ...fresh, acknowledgement: snooze.acknowledgement! };
    expect(incidentState(status, 99)).toBe("acknowledged");
    expect(incidentState(status, 100)).toBe("open");
    expect(auditActionOf({ kind: "acknowledge", actor: "ana", reason: "r", until: 100 })).toBe("incident-snooze");
    expect(auditActionOf({ kind: "acknowledge", actor: "ana", reason: "r", until: null })).toBe("incident-acknowledge");
  });

  it("refuses with a sentence naming the incident: no reason, a snooze that ends now or before, anything on a resolved incident", () => {
    expect(decideIncidentAction("sla:x", fresh, { kind: "resolve", actor: "a", reason: " " }, 0).refusal).toBe("a reason is required to resolve incident sla:x");
    expect(decideIncidentAction("sla:x", fresh, { kind: "acknowledge", actor: "a", reason: "r", until: 5 }, 5).refusal).toBe("a snooze of incident sla:x must end after now");
    const done: IncidentStatus = { ...fresh, resolvedAt: 3, resolvedBy: "watchdog" };
    expect(decideIncidentAction("sla:x", done, { kind: "acknowledge", actor: "a", reason: "r", until: null }, 5).refusal)
      .toBe("incident sla:x was resolved by watchdog; there is nothing to acknowledge");
  });

  it("property: resolved is final, and nothing but a resolution ends it", () => {
    fc.assert(fc.property(history, (h) => {
      for (const step of play(h)) {
        if (step.before.resolvedAt !== null) {
          expect(step.refusal).toBeDefined();
          expect(step.after).toEqual(step.before);
        }
        if (step.after.resolvedAt !== null && step.before.resolvedAt === null) expect(step.action.kind).toBe("resolve");
      }
    }));
  });

  it("property: an action is allowed exactly when it has a reason, the incident is unresolved and a snooze ends later; a refusal changes nothing", () => {
    fc.assert(fc.property(history, (h) => {
      for (const step of play(h)) {
        const allowed = step.action.reason.trim() !== "" && step.before.resolvedAt === null &&
          (step.action.kind === "resolve" || step.action.until === null || step.action.until > step.at);
        expect(step.refusal === undefined).toBe(allowed);
        if (!allowed) expect(step.after).toEqual(step.before);
      }
    }));
  });

  it("property: the state follows the newest acknowledgement and its end, from either open or acknowledged", () => {
    fc.assert(fc.property(history, fc.integer({ min: 0, max: 500 }), (h, later) => {
      for (const step of play(h)) {
        if (step.refusal || step.action.kind !== "acknowledge") continue;
        expect(step.after.acknowledgement).toEqual({ at: step.at, by: step.action.actor, reason: step.action.reason.trim(), until: step.action.until });
        const at = step.at + later;
        const expected = step.action.until === null || step.action.until > at ? "acknowledged" : "open";
        expect(incidentState(step.after, at)).toBe(expected);
      }
    }));
  });

  it("property: a checker passing at any times tells each lapsed snooze's end once, only while open, and never an acknowledgement without an end", () => {
    const passes = fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 12 });
    fc.assert(fc.property(history, passes, (h, passGaps) => {
      // Interleave the person's steps with checker passes on one timeline.
      const steps = play(h);
      const passTimes = passGaps.reduce<number[]>((times, gap) => [...times, (times.at(-1) ?? 0) + gap], []);
      let reopenedFor: number | null = null;
      const told = new Map<number, number>();
      const statusAt = (t: number) => [...steps].reverse().find((s) => s.at <= t)?.after ?? fresh;
      for (const t of passTimes) {
        const status = statusAt(t);
        const due = reopenDue({ ...status, reopenedFor }, t);
        if (due) {
          expect(incidentState(status, t)).toBe("open");
          expect(status.acknowledgement?.until).not.toBeNull();
          told.set(status.acknowledgement!.at, (told.get(status.acknowledgement!.at) ?? 0) + 1);
          reopenedFor = status.acknowledgement!.at;
        }
        expect(reopenDue({ ...status, reopenedFor }, t)).toBe(false);
        if (status.resolvedAt === null && status.acknowledgement !== null && status.acknowledgement.until !== null && status.acknowledgement.until <= t) {
          expect(told.get(status.acknowledgement.at)).toBe(1);
        }
      }
      for (const count of told.values()) expect(count).toBe(1);
    }));
  });

  it("an acknowledgement without an end never reopens; a resolved incident never does", () => {
    const ack = { at: 10, until: null };
    expect(reopenDue({ resolvedAt: null, acknowledgement: ack, reopenedFor: null }, 1e15)).toBe(false);
    expect(reopenDue({ resolvedAt: 50, acknowledgement: { at: 10, until: 20 }, reopenedFor: null }, 100)).toBe(false);
    expect(reopenDue({ resolvedAt: null, acknowledgement: { at: 10, until: 20 }, reopenedFor: null }, 19)).toBe(false);
    expect(reopenDue({ resolvedAt: null, acknowledgement: { at: 10, until: 20 }, reopenedFor: null }, 20)).toBe(true);
  });
});
