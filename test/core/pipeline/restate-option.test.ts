import { describe, expect, it } from "vitest";
import { pipeline } from "../../../src/core/pipeline/define.ts";
import { canonicalJson } from "../../../src/core/pipeline/canonical-json.ts";
import { daily } from "../../../src/core/time/index.ts";

const schedule = daily({ at: "02:00", timezone: "Europe/London" });
const noop = () => {};

describe("the restate option", () => {
  it("is explicit per pipeline, with a per-task opt-out, and part of the graph version", () => {
    const plain = pipeline("orders", { schedule }, { load: { run: noop }, export: { after: ["load"], run: noop } });
    const restating = pipeline("orders", { schedule, restate: { last: 7 } }, { load: { run: noop }, export: { after: ["load"], run: noop, restate: false } });
    expect(plain.restate).toBeNull();
    expect(restating.restate).toEqual({ last: 7 });
    expect([...restating.tasks.values()].map((t) => [t.id, t.restate])).toEqual([["load", true], ["export", false]]);
    expect(restating.version).not.toBe(plain.version);
    expect(restating.definition.restate).toEqual({ last: 7 });
    // pipelines that do not use it keep the version they had
    expect(canonicalJson(plain.definition)).not.toContain("restate");
  });

  it.each([
    [{ last: 0 }, "restate.last must be a whole number 1..1000, not 0"],
    [{ last: 2.5 }, "restate.last must be a whole number 1..1000, not 2.5"],
    [{ last: 7, trailing: "7d" }, `restate: unknown option "trailing" (only "last")`],
    [7, "restate must be { last: N } (N intervals before each scheduled one), not 7"],
  ])("refuses restate %j with one line naming the pipeline", (restate, message) => {
    expect(() => pipeline("orders", { schedule, restate: restate as never }, { load: { run: noop } })).toThrow(`pipeline orders: ${message}`);
  });

  it("needs a schedule, a task that takes part, and a boolean opt-out", () => {
    expect(() => pipeline("manual_one", { restate: { last: 3 } }, { load: { run: noop } })).toThrow(
      "pipeline manual_one: restate needs a schedule: a manual pipeline has no scheduled run to restate after",
    );
    expect(() => pipeline("all_out", { schedule, restate: { last: 3 } }, { load: { run: noop, restate: false } })).toThrow(
      "pipeline all_out: restate: every task opts out (restate: false), so nothing would be restated",
    );
    expect(() => pipeline("odd", { schedule, restate: { last: 3 } }, { load: { run: noop, restate: "no" as never } })).toThrow(
      'pipeline odd, task load: restate must be true or false, not "no"',
    );
  });
});
