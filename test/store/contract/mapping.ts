import { describe, expect, it } from "vitest";
import { TASK_STATES, type TaskState } from "../../../src/core/model/states.ts";
import { expandItems, mappedTaskId, type MappedItem } from "../../../src/core/policy/fan-out.ts";
import type { ClaimedAttempt } from "../../../src/store/port.ts";
import { newRun, tasksOf } from "../../support/shapes.ts";
import { T0, type Harness } from "./harness.ts";

const RUN = "p@2026-09-01";
const place = { pipelineId: "p", taskId: "load", businessDate: "2026-09-01" };

/** Items as core expands them: string items are their own keys. */
function listOf(keys: readonly string[]): MappedItem[] {
  const expansion = expandItems(keys, { maxItems: 1_000_000 }, place);
  if ("problem" in expansion) throw new Error(expansion.problem.message);
  return expansion.items;
}

export function mappingContract(h: Harness): void {
  const { store, saveGraph, claim, finish, states } = h;

  /** list -> load (mapped) -> reduce; `list` ran, `load`'s first step is claimed and returned. */
  async function mappedRun(overrides: Parameters<typeof tasksOf>[2] = {}): Promise<ClaimedAttempt> {
    const edges = await saveGraph("mapped", [["list", "load"], ["load", "reduce"]]);
    await store.createRunIfAbsent(newRun({ graphVersion: "mapped", tasks: tasksOf(["list", "load", "reduce"], edges, overrides) }));
    const [list] = await claim();
    await store.finishAttempt(finish(list!));
    const [load] = await claim();
    expect(load!.taskId).toBe("load");
    return load!;
  }

  async function finishAll(outcome: (a: ClaimedAttempt) => "success" | "failed" = () => "success", now = T0 + 2_000): Promise<string[]> {
    const done: string[] = [];
    for (let batch = await claim(50, now); batch.length > 0; batch = await claim(50, now)) {
      for (const a of batch) {
        await store.finishAttempt(finish(a, { now, outcome: outcome(a), summary: JSON.stringify({ rows: a.mapKey?.length ?? 0 }) }));
        done.push(a.taskId);
      }
    }
    return done;
  }

  describe("MappingReads", () => {
    it("expands a list into one instance per key, each claimed with its key and item, and ends the mapped task when they all have", async () => {
      const load = await mappedRun({ load: { maxTries: 3, pool: null, priority: 5 } });
      const outcome = await store.finishAttempt(finish(load, { map: { items: listOf(["b.csv", "a.csv", "c/d.csv"]), maxActive: null } }));
      expect(outcome).toMatchObject({ accepted: true, taskState: "scheduled", runState: null });
      expect(await states()).toMatchObject({ load: "scheduled", "load[a.csv]": "queued", "load[b.csv]": "queued", "load[c/d.csv]": "queued", reduce: "scheduled" });
      const claimed = await claim();
      expect(claimed.map((c) => [c.taskId, c.mapKey, c.mapItem, c.maxTries]).sort()).toEqual([
        ["load[a.csv]", "a.csv", '"a.csv"', 3], ["load[b.csv]", "b.csv", '"b.csv"', 3], ["load[c/d.csv]", "c/d.csv", '"c/d.csv"', 3],
      ]);
      // A key with a slash still gets a log folder of its own, inside the run's.
      expect(claimed.find((c) => c.mapKey === "c/d.csv")!.logPath).toBe("/logs/p@2026-09-01/load[c%2Fd%2Ecsv]/try-1.log");
      for (const a of claimed.slice(0, 2)) await store.finishAttempt(finish(a, { summary: JSON.stringify({ rows: 1 }) }));
      expect((await states()).load).toBe("scheduled");
      await store.finishAttempt(finish(claimed[2]!, { summary: JSON.stringify({ rows: 1 }) }));
      expect(await states()).toMatchObject({ load: "success", reduce: "queued" });
      // A reduce reads its instances' summaries a page at a time, by key.
      const first = await store.pageMappedInstances({ runId: RUN, taskId: "load", limit: 2 });
      expect(first.map((i) => [i.key, i.position, i.state, i.summary])).toEqual([["a.csv", 1, "success", { rows: 1 }], ["b.csv", 0, "success", { rows: 1 }]]);
      const second = await store.pageMappedInstances({ runId: RUN, taskId: "load", afterKey: "b.csv", limit: 2 });
      expect(second.map((i) => [i.taskId, i.item])).toEqual([["load[c/d.csv]", '"c/d.csv"']]);
      expect((await store.pageMappedInstances({ runId: RUN, taskId: "load", keyPrefix: "c/", limit: 10 })).map((i) => i.key)).toEqual(["c/d.csv"]);
      // A grid's cells: the mapped task is one cell, whatever the number of its instances.
      expect((await store.taskStatesOfRuns([RUN])).map((c) => c.taskId).sort()).toEqual(["list", "load", "reduce"]);
      const [reduce] = await claim();
      expect((await store.finishAttempt(finish(reduce!))).runState).toBe("success");
    });

    it("runs at most maxActive instances of a mapped task at once, releasing held ones in list order", async () => {
      const load = await mappedRun();
      await store.finishAttempt(finish(load, { map: { items: listOf(["k1", "k2", "k3", "k4", "k5"]), maxActive: 2 } }));
      const first = await claim();
      expect(first.map((c) => c.mapKey).sort()).toEqual(["k1", "k2"]);
      expect(await claim()).toEqual([]);
      await store.finishAttempt(finish(first[0]!, { outcome: "failed", retryable: false }));
      const third = await claim();
      expect(third.map((c) => c.mapKey)).toEqual(["k3"]);
      for (const a of [first[1]!, third[0]!]) await store.finishAttempt(finish(a));
      const done = await finishAll();
      expect(done.sort()).toEqual(["load[k4]", "load[k5]"]);
      // One failed instance fails the mapped task, and what needs it does not run.
      expect(await states()).toMatchObject({ load: "failed", reduce: "upstream_failed" });
      expect((await store.getRun(RUN))!.state).toBe("failed");
      const row = (await store.listTaskInstances(RUN)).find((t) => t.taskId === "load")!;
      expect(row.reason).toBe("1 of 5 mapped instances failed");
    });

    it("ends the run with the last instance of a mapped task that nothing follows", async () => {
      await saveGraph("solo", []);
      await store.createRunIfAbsent(newRun({ graphVersion: "solo", tasks: tasksOf(["load"]) }));
      const [load] = await claim();
      await store.finishAttempt(finish(load!, { map: { items: listOf(["x", "y"]), maxActive: 1 } }));
      const [x] = await claim();
      expect((await store.finishAttempt(finish(x!))).runState).toBeNull();
      const [y] = await claim();
      expect(y!.mapKey).toBe("y");
      expect(await store.finishAttempt(finish(y!))).toEqual({ accepted: true, taskState: "success", runState: "success" });
      expect(await states()).toEqual({ load: "success", "load[x]": "success", "load[y]": "success" });
    });

    it("moves each key of a per-key chain on as soon as its own upstream instance ends, whatever the other keys do", async () => {
      const edges = await saveGraph("chain", [["load", "check"], ["check", "report"]]);
      await store.createRunIfAbsent(newRun({ graphVersion: "chain", tasks: tasksOf(["load", "check", "report"], edges) }));
      const [load] = await claim();
      await store.finishAttempt(finish(load!, { map: { items: listOf(["a", "b", "c"]), maxActive: null, chained: [{ taskId: "check", parent: "load" }] } }));
      expect(await states()).toMatchObject({ load: "scheduled", check: "scheduled", "check[a]": "scheduled", "load[a]": "queued", report: "scheduled" });
      const loads = await claim();
      expect(loads.map((c) => c.taskId)).toEqual(["load[a]", "load[b]", "load[c]"]);
      await store.finishAttempt(finish(loads[0]!));
      // a's check runs while b and c still load
      const [checkA] = await claim();
      expect([checkA!.taskId, checkA!.mapKey, checkA!.mapItem]).toEqual(["check[a]", "a", '"a"']);
      await store.finishAttempt(finish(loads[1]!, { outcome: "failed", retryable: false }));
      expect((await states())["check[b]"]).toBe("upstream_failed");
      await store.finishAttempt(finish(checkA!));
      await store.finishAttempt(finish(loads[2]!));
      const [checkC] = await claim();
      const outcome = await store.finishAttempt(finish(checkC!));
      expect(await states()).toMatchObject({ load: "failed", check: "failed", "check[a]": "success", "check[c]": "success", report: "upstream_failed" });
      expect(outcome.runState).toBe("failed");
    });

    it("runs at most maxActive instances of a task mapped by key: an eligible one is held until a place frees, one still waiting for its key's upstream never", async () => {
      const edges = await saveGraph("chain", [["load", "check"], ["check", "report"]]);
      await store.createRunIfAbsent(newRun({ graphVersion: "chain", tasks: tasksOf(["load", "check", "report"], edges) }));
      const [load] = await claim();
      await store.finishAttempt(finish(load!, { map: { items: listOf(["a", "b", "c"]), maxActive: null, chained: [{ taskId: "check", parent: "load", maxActive: 1 }] } }));
      const loads = await claim();
      expect(loads.map((c) => c.taskId)).toEqual(["load[a]", "load[b]", "load[c]"]);
      await store.finishAttempt(finish(loads[0]!));
      await store.finishAttempt(finish(loads[1]!));
      // b's check is eligible but held: check has one place, and a's check holds it
      expect(await states()).toMatchObject({ "check[a]": "queued", "check[b]": "scheduled", "check[c]": "scheduled", "load[c]": "running" });
      const [checkA, ...none] = await claim();
      expect([checkA!.taskId, none]).toEqual(["check[a]", []]);
      await store.finishAttempt(finish(checkA!));
      // a's place goes to b, not to c, whose load still runs
      expect(await states()).toMatchObject({ "check[a]": "success", "check[b]": "queued", "check[c]": "scheduled" });
      await store.finishAttempt(finish(loads[2]!));
      expect(await states()).toMatchObject({ "check[b]": "queued", "check[c]": "scheduled" });
      const [checkB, ...none2] = await claim();
      expect([checkB!.taskId, none2]).toEqual(["check[b]", []]);
      await store.finishAttempt(finish(checkB!));
      const [checkC] = await claim();
      expect(checkC!.taskId).toBe("check[c]");
      await store.finishAttempt(finish(checkC!));
      expect(await states()).toMatchObject({ load: "success", check: "success", report: "queued" });
    });

    it("a mark of one instance of an ended mapped task reopens it: it ends afresh, and its reduce runs", async () => {
      const load = await mappedRun();
      await store.finishAttempt(finish(load, { map: { items: listOf(["a", "b"]), maxActive: null } }));
      await finishAll((a) => (a.taskId === "load[b]" ? "failed" : "success"));
      expect(await states()).toMatchObject({ load: "failed", reduce: "upstream_failed" });
      expect((await store.getRun(RUN))!.state).toBe("failed");
      await store.markTask({ runId: RUN, taskId: "load[b]", state: "success", reason: "loaded by hand", at: T0 + 3_000 });
      expect(await states()).toMatchObject({ load: "success", "load[a]": "success", "load[b]": "success", reduce: "queued" });
      expect((await store.getRun(RUN))!.state).toBe("queued");
    });

    it("skips a mapped task whose list is empty, with the reason, and the run goes on", async () => {
      const load = await mappedRun();
      const outcome = await store.finishAttempt(finish(load, { map: { items: [], maxActive: null } }));
      expect(outcome.taskState).toBe("skipped");
      const ti = (await store.listTaskInstances(RUN)).find((t) => t.taskId === "load")!;
      expect([ti.state, ti.reason]).toEqual(["skipped", "the list to map over is empty"]);
      expect((await states()).reduce).toBe("skipped");
      expect((await store.getRun(RUN))!.state).toBe("success");
    });

    it("on a rerun keeps the instances of kept keys with their history, adds new keys and records missing ones as removed", async () => {
      const load = await mappedRun();
      await store.finishAttempt(finish(load, { map: { items: listOf(["a", "b", "c"]), maxActive: null } }));
      expect(await finishAll()).toContain("reduce");
      const edges: [string, string][] = [["list", "load"], ["load", "reduce"]];
      await store.rerun({ runId: RUN, graphVersion: "mapped", tasks: tasksOf(["list", "load", "reduce"], edges), params: {}, at: T0 + 10_000 });
      // The old instances stay until the list is found again.
      expect((await states())["load[a]"]).toBe("success");
      const [list] = await claim(10, T0 + 10_000);
      await store.finishAttempt(finish(list!, { now: T0 + 11_000 }));
      const [again] = await claim(10, T0 + 11_000);
      await store.finishAttempt(finish(again!, { now: T0 + 12_000, map: { items: listOf(["b", "d", "c"]), maxActive: null } }));
      expect(await states()).toMatchObject({ "load[a]": "removed", "load[b]": "queued", "load[c]": "queued", "load[d]": "queued", load: "scheduled" });
      const removed = (await store.pageMappedInstances({ runId: RUN, taskId: "load", states: ["removed"], limit: 10 }))[0]!;
      expect([removed.key, removed.reason, removed.summary]).toEqual(["a", "removed: its key is no longer in the list", { rows: 1 }]);
      const ran = await finishAll(() => "success", T0 + 13_000);
      expect(ran.sort()).toEqual(["load[b]", "load[c]", "load[d]", "reduce"]);
      const tries = Object.fromEntries((await store.listTaskInstances(RUN)).map((t) => [t.taskId, t.tryNumber]));
      expect(tries).toMatchObject({ "load[a]": 1, "load[b]": 2, "load[c]": 2, "load[d]": 1 });
      expect(await states()).toMatchObject({ load: "success", reduce: "success" });
    });

    it("expands 100,000 items in one finish, each key once, in list order, and runs them by key", async () => {
      const load = await mappedRun();
      const keys = Array.from({ length: 100_000 }, (_, i) => `file-${String(i).padStart(6, "0")}.csv`);
      const outcome = await store.finishAttempt(finish(load, { map: { items: listOf(keys), maxActive: null } }));
      expect(outcome.taskState).toBe("scheduled");
      let seen = 0;
      let after: string | undefined;
      for (;;) {
        const page = await store.pageMappedInstances({ runId: RUN, taskId: "load", afterKey: after, limit: 10_000 });
        if (page.length === 0) break;
        for (const i of page) {
          expect(i.key).toBe(keys[seen]);
          expect(i.position).toBe(seen);
          expect(i.state).toBe("queued");
          expect(i.taskId).toBe(mappedTaskId("load", keys[seen]!));
          seen++;
        }
        after = page.at(-1)!.key;
      }
      expect(seen).toBe(100_000);
      const first = await claim(3);
      expect(first.map((c) => c.mapKey)).toEqual(keys.slice(0, 3));
      expect((await store.getRun(RUN))!.state).toBe("running");
    }, 120_000);
  });

  /** Every mapped task row's counts by state against a recount of its instances, read a page at a time. */
  async function expectCountsAgree(): Promise<void> {
    for (const row of (await store.taskRowsOfRun(RUN)).filter((t) => t.mapped)) {
      const recount = Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as Record<TaskState, number>;
      for (let after: string | undefined; ; ) {
        const page = await store.pageMappedInstances({ runId: RUN, taskId: row.taskId, afterKey: after, limit: 7 });
        for (const i of page) recount[i.state]++;
        if (page.length < 7) break;
        after = page.at(-1)!.key;
      }
      expect({ task: row.taskId, ...row.mapped!.states }).toEqual({ task: row.taskId, ...recount });
      const cell = (await store.taskStatesOfRuns([RUN])).find((c) => c.taskId === row.taskId)!;
      expect(cell.mapped).toEqual(recount);
    }
  }

  // A run's page and a grid's cell read a mapped task as one row: these are HistoryReads methods.
  describe("HistoryReads", () => {
    it("lists a run's task rows and their attempts without the mapped instances, a mapped task with its instances counted by state", async () => {
      const load = await mappedRun({ load: { maxTries: 2 } });
      expect((await store.taskRowsOfRun(RUN)).find((t) => t.taskId === "load")!.mapped).toBeNull();
      await store.finishAttempt(finish(load, { map: { items: listOf(["a", "b", "c", "d", "e"]), maxActive: null } }));
      const rows = await store.taskRowsOfRun(RUN);
      expect(rows.map((t) => t.taskId).sort()).toEqual(["list", "load", "reduce"]);
      expect(rows.find((t) => t.taskId === "list")!.mapped).toBeNull();
      const counts = rows.find((t) => t.taskId === "load")!.mapped!;
      expect([counts.total, counts.live, counts.failing]).toEqual([5, 5, 0]);
      expect(counts.states).toMatchObject({ queued: 5, running: 0, success: 0, removed: 0 });
      await expectCountsAgree();

      const claimed = await claim(4, T0 + 2_000);
      await store.finishAttempt(finish(claimed[0]!, { now: T0 + 2_000 }));
      await store.finishAttempt(finish(claimed[1]!, { now: T0 + 2_000, outcome: "failed", retryable: false }));
      await store.finishAttempt(finish(claimed[2]!, { now: T0 + 2_000, outcome: "failed", retryable: true, retryAt: T0 + 60_000 }));
      expect((await store.taskRowsOfRun(RUN)).find((t) => t.taskId === "load")!.mapped!.states).toMatchObject({
        queued: 1, running: 1, success: 1, failed: 1, up_for_retry: 1, removed: 0,
      });
      await expectCountsAgree();
      // The instances' attempts are not the run page's: list's, and load's own that found the list.
      expect((await store.attemptsOfTaskRows(RUN)).map((a) => `${a.taskId} ${a.tryNumber} ${a.state}`)).toEqual(["list 1 success", "load 1 success"]);
      expect((await store.listAttempts(RUN)).length).toBe(6);

      // A mark by hand, a clear by key and a rerun whose list drops keys keep the counts.
      await store.markTask({ runId: RUN, taskId: "load[b]", state: "success", reason: "by hand", at: T0 + 3_000 });
      await expectCountsAgree();
      await store.finishAttempt(finish(claimed[3]!, { now: T0 + 3_000 }));
      await finishAll(() => "success", T0 + 70_000);
      await expectCountsAgree();
      const tasks = tasksOf(["list", "load", "reduce"], [["list", "load"], ["load", "reduce"]]);
      await store.clearKeys({ runId: RUN, taskId: "load", selector: "a", chain: [], downstream: ["reduce"], tasks, at: T0 + 80_000 });
      await expectCountsAgree();
      await finishAll(() => "success", T0 + 81_000);
      await store.rerun({ runId: RUN, graphVersion: "mapped", tasks, params: {}, at: T0 + 90_000 });
      // Reset, the mapped task counts nothing until its list is found again.
      expect((await store.taskRowsOfRun(RUN)).find((t) => t.taskId === "load")!.mapped).toBeNull();
      expect((await store.taskStatesOfRuns([RUN])).find((c) => c.taskId === "load")!.mapped).toBeNull();
      const [list] = await claim(10, T0 + 90_000);
      await store.finishAttempt(finish(list!, { now: T0 + 91_000 }));
      const [again] = await claim(10, T0 + 91_000);
      await store.finishAttempt(finish(again!, { now: T0 + 92_000, map: { items: listOf(["b", "c", "f"]), maxActive: 1 } }));
      const after = (await store.taskRowsOfRun(RUN)).find((t) => t.taskId === "load")!.mapped!;
      expect([after.total, after.states.removed, after.states.queued, after.states.scheduled]).toEqual([3, 3, 1, 2]);
      await expectCountsAgree();
      // An instance page carries when its latest try started and ended.
      const [b] = await store.pageMappedInstances({ runId: RUN, taskId: "load", keyPrefix: "b", limit: 1 });
      expect([b!.key, b!.startedAt, b!.endedAt]).toEqual(["b", null, null]);
      const [a] = await store.pageMappedInstances({ runId: RUN, taskId: "load", keyPrefix: "a", limit: 1 });
      expect([a!.state, typeof a!.startedAt, a!.endedAt]).toEqual(["removed", "number", T0 + 92_000]);
    });
  });

  // Clearing by key is a RunStore method, tested here with the mapped runs above.
  describe("RunStore", () => {
    it("reads one task instance, a mapped instance by its id, without the run's others", async () => {
      const load = await mappedRun();
      await store.finishAttempt(finish(load, { map: { items: listOf(["a", "b"]), maxActive: null } }));
      expect(await store.getTaskInstance(RUN, "load[b]")).toMatchObject({ runId: RUN, taskId: "load[b]", state: "queued", tryNumber: 0, mapped: null });
      expect((await store.getTaskInstance(RUN, "load"))!.mapped).toMatchObject({ total: 2, live: 2, failing: 0, states: { queued: 2 } });
      expect(await store.getTaskInstance(RUN, "load[zz]")).toBeNull();
      expect(await store.getTaskInstance("p@1999-01-01", "load")).toBeNull();
    });

    describe("clearing mapped instances by key", () => {
      it("clears one key of an ended run: that key, its chained instance and the reduce run again, no other key", async () => {
        const edges = await saveGraph("chain", [["load", "check"], ["check", "report"]]);
        const tasks = tasksOf(["load", "check", "report"], edges);
        await store.createRunIfAbsent(newRun({ graphVersion: "chain", tasks }));
        const [load] = await claim();
        await store.finishAttempt(finish(load!, { map: { items: listOf(["a", "b"]), maxActive: null, chained: [{ taskId: "check", parent: "load" }] } }));
        await finishAll((a) => (a.taskId === "load[b]" ? "failed" : "success"));
        expect(await states()).toMatchObject({ load: "failed", "check[b]": "upstream_failed", report: "upstream_failed" });
        expect((await store.getRun(RUN))!.state).toBe("failed");
        const cleared = await store.clearKeys({ runId: RUN, taskId: "load", selector: "b", chain: ["check"], downstream: ["report"], tasks, at: T0 + 3_000 });
        expect(cleared).toEqual({ keys: ["b"] });
        expect(await states()).toEqual({
          load: "scheduled", "load[a]": "success", "load[b]": "queued", check: "scheduled", "check[a]": "success", "check[b]": "scheduled", report: "scheduled",
        });
        expect((await store.getRun(RUN))!.state).toBe("queued");
        const done = await finishAll(() => "success", T0 + 4_000);
        expect(done).toEqual(["load[b]", "check[b]", "report"]);
        expect(await states()).toMatchObject({ load: "success", check: "success", report: "success" });
        expect((await store.getRun(RUN))!.state).toBe("success");
        // try numbers go on: load[b] ran twice
        expect((await store.listTaskInstances(RUN)).find((t) => t.taskId === "load[b]")!.tryNumber).toBe(2);
      });

      it("clears every key a pattern matches, and refuses a pattern matching nothing or reaching a running instance", async () => {
        const load = await mappedRun();
        await store.finishAttempt(finish(load, { map: { items: listOf(["2026-01", "2026-02", "2027-01", "a*b"]), maxActive: 1 } }));
        await finishAll();
        expect((await states()).reduce).toBe("success");
        const tasks = tasksOf(["list", "load", "reduce"], [["list", "load"], ["load", "reduce"]]);
        const clear = (selector: string) => store.clearKeys({ runId: RUN, taskId: "load", selector, chain: [], downstream: ["reduce"], tasks, at: T0 + 3_000 });
        await expect(clear("2025-*")).rejects.toThrow(/no instance of load matches load\[2025-\*\]/);
        expect((await clear("2026-*")).keys).toEqual(["2026-01", "2026-02"]);
        // maxActive 1 holds the second key back
        expect(await states()).toMatchObject({ load: "scheduled", "load[2026-01]": "queued", "load[2026-02]": "scheduled", "load[2027-01]": "success", reduce: "scheduled" });
        const [running] = await claim(10, T0 + 4_000);
        expect(running!.taskId).toBe("load[2026-01]");
        await expect(clear("*")).rejects.toThrow(/running \(load\[2026-01\]\)/);
        await store.finishAttempt(finish(running!, { now: T0 + 4_000 }));
        expect(await finishAll(() => "success", T0 + 5_000)).toEqual(["load[2026-02]", "reduce"]);
        // an escaped star names the key itself
        expect((await clear("a\\*b")).keys).toEqual(["a*b"]);
      });
    });

    describe("marking mapped instances by key pattern", () => {
      it("settles every key a glob matches in one transaction: the ended mapped task ends afresh and its reduce runs", async () => {
        const load = await mappedRun();
        await store.finishAttempt(finish(load, { map: { items: listOf(["a1", "a2", "b"]), maxActive: null } }));
        await finishAll((a) => (a.mapKey?.startsWith("a") ? "failed" : "success"));
        expect(await states()).toMatchObject({ load: "failed", reduce: "upstream_failed" });
        const mark = (selector: string) => store.markKeys({ runId: RUN, taskId: "load", selector, state: "success", reason: "loaded by hand", at: T0 + 3_000 });
        await expect(mark("zz*")).rejects.toThrow(/no instance of load matches load\[zz\*\]/);
        expect(await mark("a*")).toEqual({ keys: ["a1", "a2"], marked: ["load[a1]", "load[a2]"] });
        expect(await states()).toMatchObject({ load: "success", "load[a1]": "success", "load[a2]": "success", "load[b]": "success", reduce: "queued" });
        expect((await store.getRun(RUN))!.state).toBe("queued");
        // nothing is left to mark: refused, nothing written
        await expect(mark("*")).rejects.toThrow(/every instance load\[\*\] matches \(3\) is success already/);
      });

      it("marking held instances under maxActive frees no place: the cap still holds", async () => {
        const load = await mappedRun();
        await store.finishAttempt(finish(load, { map: { items: listOf(["x1", "x2", "y1", "y2"]), maxActive: 1 } }));
        expect(await states()).toMatchObject({ "load[x1]": "queued", "load[x2]": "scheduled", "load[y1]": "scheduled", "load[y2]": "scheduled" });
        await store.markKeys({ runId: RUN, taskId: "load", selector: "y*", state: "failed", reason: "bad files", at: T0 + 3_000 });
        expect(await states()).toMatchObject({ "load[x1]": "queued", "load[x2]": "scheduled", "load[y1]": "failed", "load[y2]": "failed", load: "scheduled" });
        const claimed = await claim(10, T0 + 4_000);
        expect(claimed.map((a) => a.taskId)).toEqual(["load[x1]"]);
        // a running instance refuses the whole mark
        await expect(store.markKeys({ runId: RUN, taskId: "load", selector: "x*", state: "success", reason: "r", at: T0 + 4_000 })).rejects.toThrow(/running \(load\[x1\]\)/);
        await store.finishAttempt(finish(claimed[0]!, { now: T0 + 5_000 }));
        expect(await finishAll(() => "success", T0 + 5_000)).toEqual(["load[x2]"]);
        expect(await states()).toMatchObject({ load: "failed", reduce: "upstream_failed" });
      });
    });
  });
}
