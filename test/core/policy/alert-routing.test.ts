import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { INCIDENT_KINDS, SEVERITIES, type IncidentKind, type Severity } from "../../../src/core/model/incidents.ts";
import { DEFAULT_SEVERITY, globMatches, incidentSeverity, routeIncident, routeMatches, type AlertRoute, type RoutedIncident } from "../../../src/core/policy/alert-routing.ts";
import { afterDelivery, digestDecision, notifierFailing, type NotifierRecord } from "../../../src/core/policy/alert-delivery.ts";

const RUNS = { numRuns: Number(process.env.IDEM_FC_RUNS ?? 300) };

const name = fc.constantFrom("sales_daily", "sales_hourly", "finance", "ops", "orders", "web");
const kind = fc.constantFrom<IncidentKind>(...INCIDENT_KINDS);
const severity = fc.constantFrom<Severity>(...SEVERITIES);
const notifier = fc.constantFrom("pd", "slack", "mail", "hook", "log");

const incident: fc.Arbitrary<RoutedIncident> = fc.record({
  kind,
  pipelineId: fc.option(name, { nil: null }),
  dataset: fc.option(name, { nil: null }),
  owner: fc.option(name, { nil: null }),
  severity,
});

const pattern = fc.oneof(name, name.map((n) => `${n.slice(0, 3)}*`), fc.constant("*"), name.map((n) => `*${n.slice(-3)}`));
const route: fc.Arbitrary<AlertRoute> = fc.record({
  match: fc.record(
    {
      pipeline: fc.oneof(pattern, fc.array(pattern, { minLength: 1, maxLength: 2 })),
      dataset: pattern,
      owner: pattern,
      severity: fc.oneof(severity, fc.array(severity, { minLength: 1, maxLength: 3 })),
      kind: fc.oneof(kind, fc.array(kind, { minLength: 1, maxLength: 3 })),
    },
    { requiredKeys: [] },
  ),
  notify: fc.array(notifier, { minLength: 1, maxLength: 2 }),
});
const routing = fc.record({ named: fc.array(notifier, { maxLength: 2 }), routes: fc.array(route, { maxLength: 5 }), fallback: fc.array(notifier, { maxLength: 2 }) });

describe("alert routing", () => {
  it("tells the promise's notifiers and those of every matching route, each once; the fallback only when that is none", () => {
    fc.assert(
      fc.property(incident, routing, (i, input) => {
        const chosen = routeIncident(i, input);
        expect(new Set(chosen).size).toBe(chosen.length);
        const expected = new Set([...input.named, ...input.routes.filter((r) => routeMatches(r.match, i)).flatMap((r) => r.notify)]);
        if (expected.size) expect(new Set(chosen)).toEqual(expected);
        else expect(new Set(chosen)).toEqual(new Set(input.fallback));
      }),
      RUNS,
    );
  });

  it("does not depend on the order of the routes, as a set", () => {
    fc.assert(
      fc.property(incident, routing, fc.integer(), (i, input, seed) => {
        const shuffled = [...input.routes].sort((a, b) => ((JSON.stringify(a).length * 31 + seed) % 7) - ((JSON.stringify(b).length * 31 + seed) % 7));
        expect(new Set(routeIncident(i, { ...input, routes: shuffled }))).toEqual(new Set(routeIncident(i, input)));
      }),
      RUNS,
    );
  });

  it("matches a route only when every condition it names holds; a condition on a field the incident lacks never holds", () => {
    fc.assert(
      fc.property(incident, route, (i, r) => {
        const m = r.match;
        const list = <T>(v: T | readonly T[] | undefined): readonly T[] | undefined => (v === undefined ? undefined : Array.isArray(v) ? v : [v as T]);
        const field = (patterns: readonly string[] | undefined, value: string | null) =>
          patterns === undefined || (value !== null && patterns.some((p) => globMatches(p, value)));
        const expected =
          field(list(m.pipeline), i.pipelineId) && field(list(m.dataset), i.dataset) && field(list(m.owner), i.owner) &&
          (list(m.severity)?.includes(i.severity) ?? true) && (list(m.kind)?.includes(i.kind) ?? true);
        expect(routeMatches(m, i)).toBe(expected);
        expect(routeMatches({}, i)).toBe(true);
      }),
      RUNS,
    );
  });

  it("reads * as any run of characters", () => {
    const piece = fc.string({ unit: fc.constantFrom("a", "b", "_"), maxLength: 3 });
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 4 }), fc.string({ unit: fc.constantFrom("a", "b", "_"), maxLength: 8 }), (parts, value) => {
        const oracle = new RegExp(`^${parts.join(".*")}$`, "s");
        expect(globMatches(parts.join("*"), value)).toBe(oracle.test(value));
        expect(globMatches(parts.join("*"), parts.join("x"))).toBe(parts.length > 1 || parts.join("x") === parts[0]);
      }),
      RUNS,
    );
    expect(globMatches("sales*", "sales_daily")).toBe(true);
    expect(globMatches("sales*", "presales")).toBe(false);
    expect(globMatches("*_daily", "sales_daily")).toBe(true);
    expect(globMatches("s*s*y", "sales_daily")).toBe(true);
    expect(globMatches("s*x*y", "sales_daily")).toBe(false);
    expect(globMatches("ab*ba", "aba")).toBe(false);
  });

  it("takes the promise's severity, then the pipeline's, then the kind's default", () => {
    fc.assert(
      fc.property(kind, fc.option(fc.oneof(severity, fc.dictionary(kind, severity)), { nil: null }), fc.option(fc.oneof(severity, fc.dictionary(kind, severity)), { nil: null }), (k, promise, pipeline) => {
        const sayOf = (o: typeof promise) => (o === null ? undefined : typeof o === "string" ? o : o[k]);
        expect(incidentSeverity(k, [promise, pipeline])).toBe(sayOf(promise) ?? sayOf(pipeline) ?? DEFAULT_SEVERITY[k]);
      }),
      RUNS,
    );
    expect(incidentSeverity("sla_missed", [{ late: "info" }, null])).toBe("critical");
    expect(incidentSeverity("late_publication", [])).toBe("info");
  });
});

describe("digests", () => {
  it("never sends one notifier more than `after` messages in any window, and lets every alert out within a window", () => {
    const policy = { after: 3, windowMs: 60_000 };
    fc.assert(
      fc.property(fc.array(fc.record({ gap: fc.integer({ min: 0, max: 40_000 }), alerts: fc.integer({ min: 0, max: 12 }) }), { minLength: 1, maxLength: 30 }), (bursts) => {
        const sent: number[] = [];
        let waiting = 0;
        let waitingSince = 0;
        let now = 0;
        const pass = () => {
          const decision = digestDecision(waiting, sent, now, policy, true);
          if (decision.send === "wait") {
            expect(decision.until).toBeGreaterThan(now);
            expect(decision.until).toBeLessThanOrEqual(now + policy.windowMs);
            return;
          }
          if (waiting === 0) return;
          if (decision.send === "digest") sent.push(now);
          else for (let i = 0; i < waiting; i++) sent.push(now);
          waiting = 0;
        };
        for (const burst of bursts) {
          now += burst.gap;
          pass();
          if (waiting === 0 && burst.alerts > 0) waitingSince = now;
          waiting += burst.alerts;
          pass();
          for (const at of sent) expect(sent.filter((t) => t > at - policy.windowMs && t <= at).length).toBeLessThanOrEqual(policy.after);
        }
        for (let i = 0; i < 3 && waiting > 0; i++) {
          now += policy.windowMs;
          pass();
        }
        expect(waiting).toBe(0);
        expect(waitingSince).toBeGreaterThanOrEqual(0);
      }),
      RUNS,
    );
  });

  it("sends each alert alone while they fit, one digest for a burst, and each alone for a kind that cannot digest", () => {
    const policy = { after: 5, windowMs: 60_000 };
    expect(digestDecision(5, [], 0, policy, true)).toEqual({ send: "each" });
    expect(digestDecision(6, [], 0, policy, true)).toEqual({ send: "digest" });
    expect(digestDecision(30, [], 0, policy, false)).toEqual({ send: "each" });
    expect(digestDecision(30, [], 0, null, true)).toEqual({ send: "each" });
    expect(digestDecision(2, [1, 2, 3, 4, 5], 10, policy, true)).toEqual({ send: "wait", until: 60_001 });
  });
});

describe("a notifier that keeps failing", () => {
  it("is failing after `after` failures in a row or `forMs` of failures, and not after a success", () => {
    const policy = { after: 3, forMs: 600_000 };
    fc.assert(
      fc.property(fc.array(fc.record({ ok: fc.boolean(), gap: fc.integer({ min: 0, max: 400_000 }) }), { maxLength: 20 }), (deliveries) => {
        let record: NotifierRecord = { failuresInARow: 0, failingSince: null };
        let now = 0;
        let inARow = 0;
        let since: number | null = null;
        for (const d of deliveries) {
          now += d.gap;
          record = afterDelivery(record, d.ok, now);
          inARow = d.ok ? 0 : inARow + 1;
          since = d.ok ? null : since ?? now;
          expect(notifierFailing(record, policy, now)).toBe(inARow > 0 && (inARow >= 3 || now - since! >= 600_000));
        }
      }),
      RUNS,
    );
  });
});
