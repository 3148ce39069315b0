import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { downstreamMap, topologicalOrder, type GraphNode } from "../../../src/core/graph/dag.ts";

/** Kahn's algorithm as it was written first: the smallest ready id next, by a full scan. */
function referenceOrder(nodes: readonly GraphNode[]): string[] {
  const waiting = new Map(nodes.map((n) => [n.id, new Set(n.upstream)]));
  const order: string[] = [];
  while (waiting.size > 0) {
    const ready = [...waiting].filter(([, ups]) => ups.size === 0).map(([id]) => id).sort();
    if (ready.length === 0) break;
    const id = ready[0]!;
    order.push(id);
    waiting.delete(id);
    for (const ups of waiting.values()) ups.delete(id);
  }
  return order;
}

/** A random DAG: each task may depend on tasks named before it (ids shuffled so names do not follow the order). */
const dag = fc.integer({ min: 1, max: 40 }).chain((n) =>
  fc.tuple(
    fc.shuffledSubarray(Array.from({ length: n }, (_, i) => `t${i}`), { minLength: n, maxLength: n }),
    fc.array(fc.array(fc.nat(), { maxLength: 4 }), { minLength: n, maxLength: n }),
  ).map(([ids, picks]) => ids.map((id, i) => ({ id, upstream: [...new Set(i === 0 ? [] : picks[i]!.map((k) => ids[k % i]!))] }))),
);

describe("the task graph", () => {
  it("orders tasks as Kahn's algorithm does with the smallest ready id first", () => {
    fc.assert(fc.property(dag, (nodes) => {
      expect(topologicalOrder(nodes)).toEqual(referenceOrder(nodes));
    }), { numRuns: 300 });
  });

  it("lists each task's children in the order of the tasks, and none for an unknown parent", () => {
    const map = downstreamMap([{ id: "b", upstream: ["a", "ghost"] }, { id: "a", upstream: [] }, { id: "c", upstream: ["a"] }]);
    expect(Object.fromEntries(map)).toEqual({ a: ["b", "c"], b: [], c: [] });
    expect(map.has("ghost")).toBe(false);
  });
});
