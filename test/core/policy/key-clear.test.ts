import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { TaskState } from "../../../src/core/model/states.ts";
import { planKeyClear } from "../../../src/core/policy/key-clear.ts";
import { isKeyPattern, keyMatcher } from "../../../src/core/policy/key-selector.ts";
import { markReopensMappedTask } from "../../../src/core/policy/fan-out.ts";

const key = fc.string({ minLength: 1, maxLength: 12 });
const escaped = (k: string) => k.replace(/[\\*]/g, (c) => `\\${c}`);
const ended: TaskState[] = ["success", "failed", "upstream_failed", "skipped"];

describe("clearing mapped instances by key", () => {
  it("an escaped key names itself alone, whatever characters it holds", () => {
    fc.assert(fc.property(key, fc.array(key), (k, others) => {
      const matches = keyMatcher(escaped(k));
      expect(isKeyPattern(escaped(k))).toBe(false);
      expect(matches(k)).toBe(true);
      for (const o of others) expect(matches(o)).toBe(o === k);
    }));
  });

  it("a prefix glob matches exactly the keys starting with the prefix", () => {
    fc.assert(fc.property(key, fc.array(key), (prefix, keys) => {
      const matches = keyMatcher(`${escaped(prefix)}*`);
      for (const k of keys) expect(matches(k)).toBe(k.startsWith(prefix));
      expect(matches(prefix)).toBe(true);
    }));
  });

  it("resets the matched keys, the same keys down the chain and the downstream tasks, never another key or a removed one", () => {
    fc.assert(fc.property(fc.uniqueArray(key, { minLength: 1, maxLength: 30 }), fc.array(fc.constantFrom(...ended, "removed" as TaskState)), (keys, states) => {
      const instances = keys.map((k, i) => ({ key: k, state: states[i] ?? "success" }));
      const chainStates = new Map(keys.map((k) => [`check[${k}]`, "success" as TaskState]));
      const plan = planKeyClear({ runId: "r", taskId: "load", selector: "*", expanded: true, instances, chain: ["check"], chainStates, downstream: [{ taskId: "report", state: "success" }] });
      const live = instances.filter((i) => i.state !== "removed").map((i) => i.key).sort();
      if (live.length === 0) {
        expect(plan.conflict).toMatch(/no instance of load matches/);
        return;
      }
      expect(plan).toEqual({
        keys: live, instances: [...live.map((k) => `load[${k}]`), ...live.map((k) => `check[${k}]`)], reopen: ["load", "check"], downstream: ["report"],
      });
    }));
  });

  it("refuses the whole clear when a matched instance, its chained one or a downstream task is running", () => {
    const base = { runId: "r", taskId: "load", selector: "a*", expanded: true, chain: ["check"], downstream: [{ taskId: "report", state: "scheduled" as TaskState }] };
    const instances = [{ key: "a1", state: "success" as TaskState }, { key: "b", state: "running" as TaskState }];
    expect(planKeyClear({ ...base, instances, chainStates: new Map() }).conflict).toBeUndefined();
    expect(planKeyClear({ ...base, instances, chainStates: new Map([["check[a1]", "running"]]) }).conflict).toMatch(/running \(check\[a1\]\)/);
    expect(planKeyClear({ ...base, expanded: false, instances: [], chainStates: new Map() }).conflict).toMatch(/no mapped instances/);
    expect(planKeyClear({ ...base, instances: [], chainStates: new Map() }).conflict).toMatch(/no instance of load matches load\[a\*\]/);
  });
});

describe("a mark of one mapped instance", () => {
  it("reopens its mapped task only once that task has ended from its instances", () => {
    expect(markReopensMappedTask({ state: "failed", mapTotal: 2 })).toBe(true);
    expect(markReopensMappedTask({ state: "success", mapTotal: 2 })).toBe(true);
    expect(markReopensMappedTask({ state: "scheduled", mapTotal: 2 })).toBe(false);
    expect(markReopensMappedTask({ state: "skipped", mapTotal: 0 })).toBe(false);
    expect(markReopensMappedTask({ state: "failed", mapTotal: null })).toBe(false);
  });
});
