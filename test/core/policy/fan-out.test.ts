import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  admitUnderMaxActive, diffKeys, expandItems, isJsonValue, mapKeyProblem, mappedTaskEnd, maxActiveHoldReason, mappedTaskId, MAX_MAP_KEY_BYTES, parseMappedTaskId,
} from "../../../src/core/policy/fan-out.ts";
import { TASK_STATES, type TaskState } from "../../../src/core/model/states.ts";

const place = { pipelineId: "files", taskId: "load", businessDate: "2026-09-01" };
const key = fc.string({ minLength: 1, maxLength: 20 }).filter((k) => mapKeyProblem(k) === null);

describe("fan-out: expanding a list", () => {
  it("gives the same keys for the same list, in its order, each item kept as JSON", () => {
    fc.assert(
      fc.property(fc.uniqueArray(key, { maxLength: 50 }), (keys) => {
        const once = expandItems(keys, { maxItems: 1000 }, place);
        const twice = expandItems([...keys], { maxItems: 1000 }, place);
        expect(once).toEqual(twice);
        expect("items" in once && once.items.map((i) => i.key)).toEqual(keys);
        expect("items" in once && once.items.map((i) => JSON.parse(i.item))).toEqual(keys);
      }),
    );
  });

  it("keys objects by the key function, and refuses an object without one as a definition error asking for it", () => {
    const items = [{ id: 7, file: "a.csv" }, { id: 8, file: "b.csv" }];
    expect(expandItems(items, { maxItems: 10, keyOf: (i) => (i as { file: string }).file }, place)).toEqual({
      items: [{ key: "a.csv", item: '{"id":7,"file":"a.csv"}' }, { key: "b.csv", item: '{"id":8,"file":"b.csv"}' }],
    });
    expect(expandItems(items, { maxItems: 10 }, place)).toEqual({
      problem: {
        kind: "definition",
        message: "pipeline files, task load, business date 2026-09-01: item 0 is an object, not a string; give map a key function (key: (item) => string)",
      },
    });
  });

  it("refuses the whole list, naming pipeline, task, business date and the offending item, key or count", () => {
    const problem = (list: unknown, options: { maxItems?: number; keyOf?: (i: unknown) => unknown } = {}) => {
      const e = expandItems(list, { maxItems: options.maxItems ?? 10, keyOf: options.keyOf }, place);
      return "problem" in e ? e.problem : null;
    };
    const where = "pipeline files, task load, business date 2026-09-01: ";
    expect(problem(["a", "b", "c"], { maxItems: 2 })).toEqual({ kind: "data", message: `${where}3 items to map over, over maxItems 2` });
    expect(problem(["a", "b", "a"])?.message).toBe(`${where}items 0 and 2 have the same key "a"`);
    expect(problem(["a", "x".repeat(MAX_MAP_KEY_BYTES + 1)])?.message).toMatch(/^pipeline files, task load, business date 2026-09-01: item 1: key "x+"\.\.\. is 257 bytes, over 256$/);
    // 86 three-byte characters are 258 bytes: bytes count, not characters.
    expect(problem(["€".repeat(86)])?.message).toContain("is 258 bytes, over 256");
    expect(problem(["ok", "tab\there"])?.message).toBe(`${where}item 1: key "tab\\there" holds a control character`);
    expect(problem([{ n: 1n }], { keyOf: () => "k" })?.message).toBe(`${where}item 0 is not JSON (an object)`);
    expect(problem([new Date(0)], { keyOf: () => "k" })?.message).toBe(`${where}item 0 is not JSON (a Date)`);
    expect(problem([Number.NaN], { keyOf: () => "k" })?.message).toBe(`${where}item 0 is not JSON (NaN)`);
    expect(problem([1], { keyOf: () => 1 })?.message).toBe(`${where}item 0: key 1 is not a string`);
    expect(problem({ files: [] })?.message).toBe(`${where}the list to map over is an object, not an array`);
    expect(problem([1], { keyOf: () => { throw new Error("no id"); } })?.message).toBe(`${where}the key function threw on item 0: no id`);
  });

  it("any list holding a duplicate key is refused, whatever else it holds", () => {
    fc.assert(
      fc.property(fc.uniqueArray(key, { minLength: 1, maxLength: 30 }), fc.nat(), (keys, pick) => {
        const dup = keys[pick % keys.length]!;
        const e = expandItems([...keys, dup], { maxItems: 1000 }, place);
        expect("problem" in e && e.problem.kind).toBe("data");
      }),
    );
  });

  it("JSON means what survives a round trip", () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => {
      expect(isJsonValue(v)).toBe(true);
    }));
    for (const v of [undefined, () => 1, Symbol("s"), 1n, Infinity, new Map(), [undefined]]) expect(isJsonValue(v)).toBe(false);
  });
});

describe("fan-out: a rerun's list against the instances a run has", () => {
  it("adds exactly the new keys, keeps exactly the common ones and removes exactly the missing ones", () => {
    fc.assert(
      fc.property(fc.uniqueArray(key, { maxLength: 40 }), fc.uniqueArray(key, { maxLength: 40 }), fc.array(fc.boolean()), (before, after, removedFlags) => {
        const existing = before.map((k, i) => ({ key: k, removed: removedFlags[i] ?? false }));
        const diff = diffKeys(existing, after);
        const had = new Set(before);
        const wanted = new Set(after);
        expect(diff.added).toEqual(after.filter((k) => !had.has(k)));
        expect(diff.kept).toEqual(after.filter((k) => had.has(k)));
        expect(diff.removed).toEqual(existing.filter((e) => !e.removed && !wanted.has(e.key)).map((e) => e.key));
        // Every key of the new list is added or kept, never both.
        expect([...diff.added, ...diff.kept].sort()).toEqual([...after].sort());
      }),
    );
  });

  it("changes nothing when the list is the same", () => {
    fc.assert(
      fc.property(fc.uniqueArray(key, { maxLength: 40 }), (keys) => {
        expect(diffKeys(keys.map((k) => ({ key: k, removed: false })), keys)).toEqual({ added: [], kept: keys, removed: [] });
      }),
    );
  });
});

describe("fan-out: why a chained instance is held", () => {
  it("counts the instances holding a maxActive place (queued, running, waiting to retry or on a remote job), not the held or ended ones", () => {
    const states = Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as Record<TaskState, number>;
    Object.assign(states, { queued: 1, running: 2, up_for_retry: 1, up_for_reschedule: 1, scheduled: 40, success: 7, failed: 3 });
    expect(maxActiveHoldReason("check", states, 5)).toBe("held by maxActive: 5 of 5 instances of check are active; it is queued when one of them ends");
  });
});

describe("fan-out: when a mapped task ends", () => {
  it("waits while an instance is live, skips an empty list, fails on any failing instance, else succeeds", () => {
    fc.assert(
      fc.property(fc.nat(100), fc.nat(100), fc.nat(100), (live, failing, rest) => {
        const total = live + failing + rest;
        const end = mappedTaskEnd({ live, failing, total });
        if (live > 0) expect(end).toBeNull();
        else if (total === 0) expect(end).toEqual({ state: "skipped", reason: "the list to map over is empty" });
        else if (failing > 0) expect(end).toEqual({ state: "failed", reason: `${failing} of ${total} mapped instances failed` });
        else expect(end).toEqual({ state: "success", reason: null });
      }),
    );
  });

  it("names an instance task[key] and reads it back; a plain task id is not an instance", () => {
    fc.assert(fc.property(key, (k) => {
      expect(parseMappedTaskId(mappedTaskId("load", k))).toEqual({ taskId: "load", key: k });
    }));
    expect(parseMappedTaskId("load")).toBeNull();
  });
});

describe("maxActive over a task mapped by key", () => {
  it("queues, in the order decided, as many eligible instances of each mapped task as it has free places, and holds the rest", () => {
    fc.assert(fc.property(
      fc.array(fc.tuple(fc.constantFrom("check", "audit", "plain"), fc.nat(50)), { maxLength: 40 }),
      fc.nat(5), fc.integer({ min: -2, max: 5 }),
      (picked, checkRoom, auditRoom) => {
        const eligible = [...new Set(picked.map(([task, k]) => (task === "plain" ? `plain${k}` : `${task}[k${k}]`)))];
        const room = new Map([["check", checkRoom], ["audit", auditRoom]]);
        const { queue, hold } = admitUnderMaxActive(eligible, room);
        expect([...queue, ...hold].sort()).toEqual([...eligible].sort());
        for (const [task, free] of room) {
          const mine = eligible.filter((id) => id.startsWith(`${task}[`));
          expect(queue.filter((id) => id.startsWith(`${task}[`))).toEqual(mine.slice(0, Math.max(0, free)));
        }
        expect(hold.some((id) => id.startsWith("plain"))).toBe(false);
      },
    ));
  });
});
