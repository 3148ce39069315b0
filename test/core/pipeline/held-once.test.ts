import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { pipeline } from "../../../src/core/pipeline/define.ts";
import { daily } from "../../../src/core/time/index.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const noop = () => {};

/** Heap bytes still reachable after `make`, beyond what was reachable before it. */
function retainedBy<T>(make: () => T): { value: T; bytes: number } {
  gc();
  const before = process.memoryUsage().heapUsed;
  const value = make();
  gc();
  return { value, bytes: process.memoryUsage().heapUsed - before };
}

describe("a pipeline of 20,000 tasks", () => {
  it("holds each task once: its definition is made when read, and every task shares one shape", () => {
    const specs: Record<string, { run: () => void }> = {};
    for (let i = 0; i < 20_000; i++) specs[`t${i}`] = { run: noop };
    const { value: wide, bytes } = retainedBy(() => pipeline("wide", { maxActiveTasks: 1_000_000 }, specs));
    // A task definition of this kind is about 250 bytes with its share of the map. Before, each
    // task was kept twice (the JSON-shaped definition beside the task) and each copy made by a
    // spread had a hidden class of its own: about 660 bytes a task.
    expect(bytes / 20_000).toBeLessThan(400);
    expect(wide.tasks.size).toBe(20_000);
    expect(wide.definition).not.toBe(wide.definition);
    expect((wide.definition.tasks as unknown[]).length).toBe(20_000);
  });
});

describe("graph versions", () => {
  // Stores hold these hashes: a change in how the definition is written or hashed would give every
  // existing pipeline a new version (and its next run a new graph) for nothing.
  it("are the hashes stores already hold", () => {
    const plain = pipeline("a", {}, { x: { run: noop } });
    const mixed = pipeline("b", { schedule: daily({ at: "02:00", timezone: "Europe/London" }), start: "2026-01-01", defaults: { retries: 2 } }, {
      x: { run: noop, retries: 1, pool: "p", produces: ["d.y"] },
      y: { after: ["x"], command: ["echo", "hi"], env: { A: "1" } },
      z: { after: ["x", "y"], sql: "select 1", connection: "c" },
      s: { sensor: () => true, pokeInterval: "5s" },
    });
    const chained: Record<string, { run: () => void; after: string[] }> = {};
    for (let i = 0; i < 2_000; i++) chained[`t${i}`] = { run: noop, after: i % 3 ? [`t${i - 1}`] : [] };
    expect(plain.version).toBe("accea58263631626");
    expect(mixed.version).toBe("56122f45f4871982");
    expect(pipeline("wide", { maxActiveTasks: 1_000_000 }, chained).version).toBe("b9f8213570834f5a");
  });
});
