import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalFrozenPeriods, describeFrozenChange, diffFrozenPeriods, isNoFrozenChange, type FrozenPeriod } from "../../../src/core/policy/frozen.ts";

const day = (n: number) => new Date(Date.UTC(2026, 0, 1 + n)).toISOString().slice(0, 10);
/** Lists of frozen periods with distinct from..to, drawn from a few dates, owners and reasons so that lists overlap. */
const periods = fc
  .uniqueArray(
    fc.record({ from: fc.integer({ min: 0, max: 6 }), length: fc.integer({ min: 0, max: 3 }), owner: fc.constantFrom("finance", "tax"), reason: fc.constantFrom("closed", "filed") }),
    { maxLength: 6, selector: (p) => `${p.from}/${p.length}` },
  )
  .map((list) => list.map((p): FrozenPeriod => ({ from: day(p.from), to: day(p.from + p.length), owner: p.owner, reason: p.reason })));

describe("changes of frozen periods", () => {
  it("say exactly how to go from the old list to the new one, and nothing when they are the same set", () => {
    fc.assert(
      fc.property(periods, periods, (before, after) => {
        const change = diffFrozenPeriods(before, after);
        const key = (p: { from: string; to: string }) => `${p.from}..${p.to}`;
        const removed = new Set(change.removed.map(key));
        const replaced = new Map(change.changed.map((c) => [key(c), c.after]));
        const applied = [
          ...before.filter((p) => !removed.has(key(p))).map((p) => ({ ...p, ...(replaced.get(key(p)) ?? {}) })),
          ...change.added,
        ];
        expect(canonicalFrozenPeriods(applied)).toEqual(canonicalFrozenPeriods(after));
        expect(isNoFrozenChange(change)).toBe(JSON.stringify(canonicalFrozenPeriods(before)) === JSON.stringify(canonicalFrozenPeriods(after)));
        expect(isNoFrozenChange(diffFrozenPeriods(after, [...after].reverse()))).toBe(true);
      }),
    );
  });

  it("read as one line naming each period with its owner", () => {
    const before: FrozenPeriod[] = [{ from: "2026-08-01", to: "2026-08-31", owner: "finance", reason: "August closed" }];
    const after: FrozenPeriod[] = [{ from: "2026-08-01", to: "2026-08-31", owner: "controlling", reason: "August closed" }, { from: "2026-09-01", to: "2026-09-30", owner: "tax", reason: "Q3 filed" }];
    expect(describeFrozenChange(diffFrozenPeriods(before, after))).toBe(
      "added frozen 2026-09-01..2026-09-30 by tax: Q3 filed; changed frozen 2026-08-01..2026-08-31: owner finance -> controlling",
    );
    expect(describeFrozenChange(diffFrozenPeriods(after, before))).toBe(
      "removed frozen 2026-09-01..2026-09-30 by tax: Q3 filed; changed frozen 2026-08-01..2026-08-31: owner controlling -> finance",
    );
  });
});
