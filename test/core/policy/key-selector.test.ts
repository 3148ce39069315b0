import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { TaskState } from "../../../src/core/model/states.ts";
import { compareCodePoints } from "../../../src/core/policy/key-clear.ts";
import { planKeyMark } from "../../../src/core/policy/key-mark.ts";
import { keyLookup, keyMatcher, keySelectorProblem, prefixSuccessor } from "../../../src/core/policy/key-selector.ts";

const key = fc.string({ minLength: 1, maxLength: 8, unit: "binary" });
const escaped = (k: string) => k.replace(/[\\*]/g, (c) => `\\${c}`);
const glob = fc.array(fc.oneof(key.map(escaped), fc.constant("*")), { minLength: 1, maxLength: 4 }).map((parts) => parts.join(""));

/** What a store's lookup reads: code point order, as SQLite's BINARY and PostgreSQL's "C" compare. */
function storeReads(selector: string, keys: readonly string[]): string[] {
  const lookup = keyLookup(selector);
  if (lookup.kind === "key") return keys.filter((k) => k === lookup.key);
  if (lookup.kind === "all") return [...keys];
  return keys.filter((k) => compareCodePoints(k, lookup.from) >= 0 && (lookup.to === null || compareCodePoints(k, lookup.to) < 0));
}

describe("what the brackets of task[...] name", () => {
  it("the lookup a store makes reads every key the selector matches (never missing one), and for a prefix only keys with that prefix", () => {
    fc.assert(fc.property(glob, fc.array(key, { maxLength: 30 }), (selector, keys) => {
      const matches = keyMatcher(selector);
      const read = storeReads(selector, keys);
      for (const k of keys) if (matches(k)) expect(read).toContain(k);
      const lookup = keyLookup(selector);
      if (lookup.kind === "range") for (const k of read) expect(k.startsWith(lookup.from)).toBe(true);
    }), { numRuns: 500 });
  });

  it("a prefix's successor is the first string after all that start with it, in code point order", () => {
    fc.assert(fc.property(key, key, (prefix, rest) => {
      const next = prefixSuccessor(prefix);
      if (next === null) return;
      expect(compareCodePoints(prefix + rest, next)).toBeLessThan(0);
      expect(compareCodePoints(prefix, next)).toBeLessThan(0);
    }));
    expect(prefixSuccessor("2026-")).toBe("2026.");
    expect(prefixSuccessor("a\u{10FFFF}")).toBe("b");
    expect(prefixSuccessor("\u{D7FF}")).toBe("\u{E000}");
    expect(prefixSuccessor("\u{10FFFF}")).toBeNull();
  });

  it("an exact key is one lookup by key; a glob opening with * reads every key", () => {
    expect(keyLookup("a.csv")).toEqual({ kind: "key", key: "a.csv" });
    expect(keyLookup("a\\*b")).toEqual({ kind: "key", key: "a*b" });
    expect(keyLookup("2026-*")).toEqual({ kind: "range", from: "2026-", to: "2026." });
    expect(keyLookup("*.csv")).toEqual({ kind: "all" });
  });

  it("refuses a selector that can name no key, in one line naming it", () => {
    expect(keySelectorProblem("load[]", "")).toMatch(/^load\[\]: the brackets are empty/);
    expect(keySelectorProblem("load[a\\]", "a\\")).toMatch(/^load\[a\\\]: ends in \\/);
    expect(keySelectorProblem("load[a\tb]", "a\tb")).toMatch(/control character \(U\+0009 at position 2\)/);
    expect(keySelectorProblem("load[...]", "x".repeat(300))).toMatch(/a key is at most 256 bytes, this one 300/);
    expect(keySelectorProblem("load[...]", `${"x".repeat(1100)}*`)).toMatch(/a glob is at most 1024 bytes/);
    expect(keySelectorProblem("load[2026-*]", "2026-*")).toBeNull();
  });
});

describe("marking mapped instances by key pattern", () => {
  const states: TaskState[] = ["success", "failed", "upstream_failed", "skipped", "scheduled", "queued", "removed"];
  it("settles exactly the matched instances not in the state already, never a removed key", () => {
    fc.assert(fc.property(fc.uniqueArray(key, { minLength: 1, maxLength: 20 }), fc.array(fc.constantFrom(...states)), (keys, picked) => {
      const instances = keys.map((k, i) => ({ key: k, state: picked[i] ?? "failed" }));
      const plan = planKeyMark({ runId: "r", taskId: "load", selector: "*", state: "success", expanded: true, instances });
      const live = instances.filter((i) => i.state !== "removed");
      const toSettle = live.filter((i) => i.state !== "success");
      if (live.length === 0) {
        expect(plan.conflict).toMatch(/no instance of load matches load\[\*\]/);
      } else if (toSettle.length === 0) {
        expect(plan.conflict).toMatch(/is success already/);
      } else {
        if (plan.conflict !== undefined) throw new Error(plan.conflict);
        expect(new Set(plan.settle)).toEqual(new Set(toSettle.map((i) => `load[${i.key}]`)));
        expect(plan.matched.length).toBe(live.length);
      }
    }));
  });

  it("is refused whole when a matched instance is running, or the task was never expanded", () => {
    const instances = [{ key: "a1", state: "failed" as TaskState }, { key: "a2", state: "running" as TaskState }, { key: "b", state: "running" as TaskState }];
    const base = { runId: "r", taskId: "load", state: "success" as const, expanded: true, instances };
    expect(planKeyMark({ ...base, selector: "a*" }).conflict).toMatch(/1 instance of load\[a\*\] running \(load\[a2\]\)/);
    expect(planKeyMark({ ...base, selector: "a1*" }).conflict).toBeUndefined();
    expect(planKeyMark({ ...base, selector: "a*", expanded: false }).conflict).toMatch(/has no mapped instances to mark/);
  });
});
