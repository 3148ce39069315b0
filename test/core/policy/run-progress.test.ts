import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TASK_STATES, type TaskState } from "../../../src/core/model/states.ts";
import {
  endTry,
  FAILING_TASK_STATES,
  LIVE_TASK_STATES,
  nextTryNumber,
  reopenedByHand,
  runEnd,
  settleByHandRefusal,
  RunProgress,
  type WaitingTask,
} from "../../../src/core/policy/run-progress.ts";
import { decideTrigger, TRIGGER_RULES, type TriggerRule } from "../../../src/core/policy/trigger-rules.ts";

const RUNS = { numRuns: Number(process.env.IDEM_FC_RUNS ?? 300) };

/** A run: tasks 0..n-1, edges from lower to higher ids (so a DAG), a rule and a number of tries each. */
interface Graph {
  rules: TriggerRule[];
  maxTries: number[];
  parents: number[][];
}

const graph: fc.Arbitrary<Graph> = fc.integer({ min: 1, max: 9 }).chain((n) =>
  fc.record({
    rules: fc.array(fc.constantFrom(...TRIGGER_RULES), { minLength: n, maxLength: n }),
    maxTries: fc.array(fc.integer({ min: 1, max: 2 }), { minLength: n, maxLength: n }),
    parents: fc.tuple(
      ...Array.from({ length: n }, (_, i) => fc.subarray(Array.from({ length: i }, (_, j) => j))),
    ) as fc.Arbitrary<number[][]>,
  }),
);

type Outcome = "success" | "failed" | "skipped";
const SETTLED: ReadonlySet<TaskState> = new Set(["success", "failed", "skipped", "upstream_failed"]);

const id = (i: number) => `t${String(i).padStart(2, "0")}`;

/** What the trigger rule says of task i with its parents as they are now (counted here, not by RunProgress). */
function ruleSays(g: Graph, states: TaskState[], i: number): string {
  const up = { total: 0, success: 0, skipped: 0, failed: 0 };
  for (const p of g.parents[i]!) {
    up.total++;
    if (states[p] === "success") up.success++;
    else if (states[p] === "skipped") up.skipped++;
    else if (states[p] === "failed" || states[p] === "upstream_failed") up.failed++;
  }
  return decideTrigger(g.rules[i]!, up).action;
}

/**
 * Runs a graph to its end the way a store does: a claim takes any eligible task, its try ends
 * with the outcome the script says, and RunProgress decides the rest, reading only the waiting
 * children of the task that settled (and theirs, as it asks). After every finish, the states are
 * checked against the trigger rules evaluated from scratch over the whole run.
 */
function simulate(g: Graph, script: { pick: number; outcome: Outcome }[]): { states: TaskState[]; ended: string | null; steps: number } {
  const n = g.rules.length;
  const states: TaskState[] = g.parents.map((p) => (p.length === 0 ? "queued" : "scheduled"));
  const tries = new Array<number>(n).fill(0);
  const children = (i: number) => Array.from({ length: n }, (_, c) => c).filter((c) => g.parents[c]!.includes(i));
  const read = (parent: string): WaitingTask[] =>
    children(Number(parent.slice(1)))
      .filter((c) => states[c] === "scheduled")
      .map((c) => ({ taskId: id(c), triggerRule: g.rules[c]!, parents: new Map(g.parents[c]!.map((p) => [id(p), states[p]!])) }));
  const live = () => states.some((s) => (LIVE_TASK_STATES as readonly string[]).includes(s));
  const failed = () => states.some((s) => (FAILING_TASK_STATES as readonly string[]).includes(s));

  let steps = 0;
  for (const { pick, outcome } of script) {
    const eligible = states.map((s, i) => [s, i] as const).filter(([s]) => s === "queued" || s === "up_for_retry");
    if (eligible.length === 0) break;
    expect(runEnd({ live: live(), failed: failed() }), "a run with work left does not end").toBeNull();
    const i = eligible[pick % eligible.length]![1];
    tries[i] = nextTryNumber({ state: states[i]!, tryNumber: tries[i]! });
    const end = endTry({ tryNumber: tries[i]!, maxTries: g.maxTries[i]! }, outcome, outcome === "failed" ? steps : null, "by the task", steps);
    states[i] = end.state;
    if (end.state !== "up_for_retry") {
      const progress = new RunProgress();
      progress.settled(id(i), end.state, steps);
      for (let parent = progress.next(); parent !== null; parent = progress.next()) progress.childrenRead(parent, read(parent));
      for (const d of progress.decided) {
        const c = Number(d.taskId.slice(1));
        expect(states[c], `${d.taskId} was waiting when decided`).toBe("scheduled");
        states[c] = d.state;
      }
      for (const d of progress.decided) {
        // No task starts (or is settled) before its upstream allows it, under every trigger rule.
        const says = ruleSays(g, states, Number(d.taskId.slice(1)));
        expect(says, `${d.taskId} (${g.rules[Number(d.taskId.slice(1))]}) ${d.state}`).toBe(d.state === "queued" ? "run" : d.state === "skipped" ? "skip" : "upstream_failed");
        expect(d.at).toBe(steps);
      }
      // A store that skips asking whether the run ended, because the decisions show live work, is right to.
      if (progress.keepsRunLive) expect(live()).toBe(true);
    }
    // Nothing is left waiting that its settled upstream decides: the decisions reached what a full
    // re-evaluation would. (A task is asked when a parent settles; until then it waits, even under `always`.)
    for (let c = 0; c < n; c++) {
      if (states[c] !== "scheduled" || !g.parents[c]!.some((p) => SETTLED.has(states[p]!))) continue;
      expect(ruleSays(g, states, c), `${id(c)} left waiting`).toBe("wait");
    }
    steps++;
  }
  return { states, ended: runEnd({ live: live(), failed: failed() }), steps };
}

describe("run progress", () => {
  it("starts no task before its upstream allows it, leaves none waiting that could be decided, and ends the run exactly when nothing live is left", () => {
    fc.assert(
      fc.property(
        graph,
        fc.array(fc.record({ pick: fc.nat(), outcome: fc.constantFrom<Outcome>("success", "success", "failed", "skipped") }), { minLength: 40, maxLength: 40 }),
        (g, script) => {
          const { states, ended } = simulate(g, script);
          const left = states.filter((s) => s === "queued" || s === "up_for_retry");
          if (left.length > 0) return; // the script ran out first
          // Nothing is left waiting for ever: the run ends, failed exactly when something failed.
          expect(states.filter((s) => (LIVE_TASK_STATES as readonly string[]).includes(s))).toEqual([]);
          expect(ended).toBe(states.some((s) => s === "failed" || s === "upstream_failed") ? "failed" : "success");
        },
      ),
      RUNS,
    );
  });

  it("decides depth first from the task that settled, children in id order, each counting the siblings decided before it", () => {
    // a fails: b (all_success) is upstream_failed, which flows to d before c is decided; c (all_done) runs.
    const progress = new RunProgress();
    progress.settled("a", "failed", 7);
    expect(progress.next()).toBe("a");
    progress.childrenRead("a", [
      { taskId: "b", triggerRule: "all_success", parents: new Map([["a", "running"]]) },
      { taskId: "c", triggerRule: "all_done", parents: new Map([["a", "running"], ["b", "scheduled"]]) },
    ]);
    expect(progress.next()).toBe("b");
    progress.childrenRead("b", [{ taskId: "c", triggerRule: "all_done", parents: new Map([["a", "running"], ["b", "scheduled"]]) }]);
    expect(progress.next()).toBeNull();
    expect(progress.decided).toEqual([
      { taskId: "b", state: "upstream_failed", reason: "upstream: 1 task(s) failed", at: 7 },
      { taskId: "c", state: "queued", reason: null, at: 7 },
    ]);
    expect(progress.madeEligible).toBe(true);
    expect(progress.settledWithoutRunning).toBe(true);
  });

  it("settles a rerun's reset tasks in the order given, going no further down", () => {
    const progress = new RunProgress();
    progress.settleEach(
      ["y", "x"],
      [
        { taskId: "x", triggerRule: "all_success", parents: new Map([["y", "scheduled"]]) },
        { taskId: "y", triggerRule: "all_success", parents: new Map([["z", "skipped"]]) },
      ],
      3,
    );
    expect(progress.next()).toBeNull();
    expect(progress.decided).toEqual([
      { taskId: "y", state: "skipped", reason: "upstream: 1 task(s) skipped", at: 3 },
      { taskId: "x", state: "skipped", reason: "upstream: 1 task(s) skipped", at: 3 },
    ]);
  });

  it("ends a try as a retry only while tries are left, and a sensor's poke keeps its try", () => {
    expect(endTry({ tryNumber: 1, maxTries: 2 }, "failed", 50, null, 10)).toEqual({ state: "up_for_retry", nextTryAt: 50, reason: null, endedAt: null });
    expect(endTry({ tryNumber: 2, maxTries: 2 }, "failed", 50, null, 10)).toEqual({ state: "failed", nextTryAt: null, reason: null, endedAt: 10 });
    expect(endTry({ tryNumber: 1, maxTries: 3 }, "failed", null, null, 10).state).toBe("failed");
    expect(endTry({ tryNumber: 1, maxTries: 1 }, "skipped", null, "no file", 10)).toEqual({ state: "skipped", nextTryAt: null, reason: "no file", endedAt: 10 });
    expect(nextTryNumber({ state: "up_for_reschedule", tryNumber: 1 })).toBe(1);
    expect(nextTryNumber({ state: "up_for_reschedule", tryNumber: 0 })).toBe(1);
    expect(nextTryNumber({ state: "up_for_retry", tryNumber: 1 })).toBe(2);
  });

  it("reopens, after a manual settle, only what a trigger rule settled, with the tries it had left", () => {
    expect(reopenedByHand({ state: "upstream_failed", reason: "upstream: 1 task(s) failed", tryNumber: 0, maxTries: 3 })).toEqual({ maxTries: 3 });
    expect(reopenedByHand({ state: "skipped", reason: "upstream: 1 task(s) skipped", tryNumber: 1, maxTries: 1 })).toEqual({ maxTries: 1 });
    expect(reopenedByHand({ state: "skipped", reason: "skipped by hand", tryNumber: 0, maxTries: 1 })).toBeNull();
    expect(reopenedByHand({ state: "failed", reason: null, tryNumber: 1, maxTries: 1 })).toBeNull();
  });
});

describe("settleByHandRefusal: what a skip or mark by hand is refused for, the same on every adapter", () => {
  it("refuses a run or task that does not exist and a running task, and lets every other state be settled", () => {
    expect(settleByHandRefusal("p@d", "t", { run: false, taskState: null })).toBe("no run p@d");
    expect(settleByHandRefusal("p@d", "t", { run: true, taskState: null })).toBe("run p@d has no task t");
    expect(settleByHandRefusal("p@d", "t", { run: true, taskState: "running" })).toBe("task t of run p@d is running; wait for it to end");
    const settleable = TASK_STATES.filter((s) => s !== "running");
    expect(settleable.map((s) => settleByHandRefusal("p@d", "t", { run: true, taskState: s }))).toEqual(settleable.map(() => null));
  });
});
