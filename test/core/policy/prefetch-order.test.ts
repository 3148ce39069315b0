import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isBackground, nextToStart, type QueuedAttempt } from "../../../src/core/policy/prefetch-order.ts";

const attempt = fc.record({
  backfillId: fc.option(fc.constantFrom("bf_1", "bf_2"), { nil: null }),
  trigger: fc.constantFrom("schedule", "manual", "restate", "backfill", "dataset"),
  id: fc.nat(),
});

/** Starts everything in the queue, one at a time, as a worker with one slot would. */
function drainOrder(queue: (QueuedAttempt & { id: number })[]): (QueuedAttempt & { id: number })[] {
  const left = [...queue];
  const order: (QueuedAttempt & { id: number })[] = [];
  while (left.length > 0) order.push(left.splice(nextToStart(left), 1)[0]!);
  return order;
}

describe("the attempt a worker starts next from its prefetch queue", () => {
  it("is none of an empty queue", () => {
    expect(nextToStart([])).toBe(-1);
  });

  it("is live work before background work, each kind in claim order, and nothing is lost or repeated", () => {
    fc.assert(
      fc.property(fc.array(attempt, { maxLength: 30 }), (queue) => {
        const order = drainOrder(queue);
        const live = queue.filter((a) => !isBackground(a));
        const background = queue.filter(isBackground);
        expect(order).toEqual([...live, ...background]);
      }),
    );
  });

  it("counts a restatement of a live run as background work, like a backfill's", () => {
    expect(isBackground({ backfillId: null, trigger: "restate" })).toBe(true);
    expect(isBackground({ backfillId: "bf_1", trigger: "backfill" })).toBe(true);
    expect(isBackground({ backfillId: null, trigger: "schedule" })).toBe(false);
    expect(nextToStart([{ backfillId: "bf_1", trigger: "backfill" }, { backfillId: null, trigger: "restate" }, { backfillId: null, trigger: "manual" }])).toBe(2);
  });
});
