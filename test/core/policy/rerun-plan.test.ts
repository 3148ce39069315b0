import { describe, expect, it } from "vitest";
import type { TaskState } from "../../../src/core/model/states.ts";
import { backfillProgress } from "../../../src/core/policy/backfill-progress.ts";
import { planRerun } from "../../../src/core/policy/rerun-plan.ts";

const run = new Map<string, TaskState>([["extract", "success"], ["load", "failed"], ["old", "success"]]);

describe("rerun plan", () => {
  it("resets every task of the new graph, removes those it no longer has and adds the new ones", () => {
    expect(planRerun("r1", run, ["extract", "load", "report"])).toEqual({ reset: ["extract", "load", "report"], removed: ["old"], added: ["report"] });
  });

  it("resets only the tasks asked for, and keeps the others", () => {
    expect(planRerun("r1", run, ["extract", "load", "old"], ["load", "load"])).toEqual({ reset: ["load"], removed: [], added: [] });
  });

  it("refuses a task the graph does not have, and a task that is running, naming them", () => {
    expect(planRerun("r1", run, ["extract", "load"], ["nope"])).toEqual({ conflict: "run r1 has no task nope" });
    const busy = new Map<string, TaskState>([...run, ["load", "running"]]);
    expect(planRerun("r1", busy, ["extract", "load", "old"])).toEqual({ conflict: "run r1 has a task running (load); wait for it to finish" });
    // A partial rerun minds only its own tasks being busy.
    expect(planRerun("r1", busy, ["extract", "load", "old"], ["extract"])).toEqual({ reset: ["extract"], removed: [], added: [] });
  });
});

describe("rerun plan of a run with mapped instances", () => {
  const mapped = new Map<string, TaskState>([["list", "success"], ["load", "failed"], ["load[a]", "success"], ["load[b]", "failed"]]);

  it("keeps the instances on a whole-run rerun, for the mapped task's new list to decide", () => {
    expect(planRerun("r1", mapped, ["list", "load"])).toEqual({ reset: ["list", "load"], removed: [], added: [] });
  });

  it("runs an instance asked for again with its mapped task", () => {
    expect(planRerun("r1", mapped, ["list", "load"], ["load[b]", "load[a]"])).toEqual({ reset: ["load"], removed: [], added: [] });
  });
});

describe("backfill progress", () => {
  it("counts items and runs by state, treating missing counts as none", () => {
    expect(backfillProgress({ planned: 5, notStarted: 1, untouched: 2 }, [{ state: "running", n: 2 }, { state: "success", n: 1 }, { state: "failed", n: 1 }])).toEqual({
      planned: 5, notStarted: 1, queued: 0, running: 2, succeeded: 1, failed: 1, untouched: 2,
    });
    expect(backfillProgress(undefined, [])).toEqual({ planned: 0, notStarted: 0, queued: 0, running: 0, succeeded: 0, failed: 0, untouched: 0 });
  });
});
