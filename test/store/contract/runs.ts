import { describe, expect, it } from "vitest";
import { newRun, tasksOf } from "../../support/shapes.ts";
import { T0, type Harness } from "./harness.ts";

export function runsContract(h: Harness): void {
  describe("RunStore", () => {
    const { store, saveGraph, claim, finish, states, createStandardRun, endedRun, restate } = h;

    it("creates one run per pipeline and interval, however often it is asked", async () => {
      const first = await createStandardRun();
      const second = await createStandardRun();
      const twinWithOtherId = await store.createRunIfAbsent(
        newRun({ runId: "p@other-name", tasks: tasksOf(["a"]) }),
      );
      expect(first.created).toBe(true);
      expect(second.created).toBe(false);
      expect(twinWithOtherId.created).toBe(false);
      expect(twinWithOtherId.run.runId).toBe("p@2026-09-01");
      expect(await store.listRuns({ pipelineId: "p" })).toHaveLength(1);
    });

    it("records the interval, trigger, who and why, and the graph version", async () => {
      const { run } = await createStandardRun();
      expect(run).toMatchObject({
        pipelineId: "p",
        businessDate: "2026-09-01",
        state: "queued",
        trigger: "manual",
        triggeredBy: "tester",
        graphVersion: "v1",
        intervalStart: Date.parse("2026-09-01T00:00:00Z"),
        intervalEnd: Date.parse("2026-09-02T00:00:00Z"),
      });
    });

    it("makes only tasks without upstream eligible at first", async () => {
      await createStandardRun();
      expect(await states()).toEqual({ a: "queued", b: "scheduled", c: "scheduled", d: "scheduled" });
    });

    it("lists runs newest interval first, per pipeline", async () => {
      await saveGraph();
      for (const day of ["2026-09-01", "2026-09-03", "2026-09-02"]) {
        await store.createRunIfAbsent(newRun({ runId: `p@${day}`, businessDate: day, tasks: tasksOf(["a"]) }));
      }
      const runs = await store.listRuns({ pipelineId: "p", limit: 2 });
      expect(runs.map((r) => r.businessDate)).toEqual(["2026-09-03", "2026-09-02"]);
      expect(await store.listRuns({ pipelineId: "other" })).toEqual([]);
    });

    it("skips and marks task instances by hand, and downstream follows", async () => {
      await createStandardRun();
      await store.skipTask({ runId: "p@2026-09-01", taskId: "a", reason: "skipped by ana: no file", at: T0 });
      expect(await states()).toEqual({ a: "skipped", b: "skipped", c: "skipped", d: "skipped" });
      await store.markTask({ runId: "p@2026-09-01", taskId: "a", state: "success", reason: "loaded by hand", at: T0 });
      expect(await states()).toEqual({ a: "success", b: "queued", c: "scheduled", d: "queued" });
    });

    it("keeps each graph version once", async () => {
      await saveGraph();
      await saveGraph();
      const version = await store.getPipelineVersion("p", "v1");
      expect(version).toMatchObject({ pipelineId: "p", version: "v1", createdAt: T0 });
      expect(await store.getPipelineVersion("p", "nope")).toBeNull();
    });

    it("indexes each code version once, and a run pinned to one carries it to every claim of its attempts", async () => {
      const record = {
        pipelineId: "p", codeVersion: "c0ffee", graphVersion: "v1", file: "pipelines/p.ts", location: "/shared/bundles",
        packages: { idem: "0.1.0" }, createdAt: T0, createdBy: "scheduler",
      };
      await store.saveCodeVersion(record);
      await store.saveCodeVersion({ ...record, location: "/elsewhere", createdAt: T0 + 1 });
      expect(await store.getCodeVersion("p", "c0ffee")).toEqual(record);
      expect(await store.getCodeVersion("p", "nope")).toBeNull();
      expect(await store.getCodeVersion("other", "c0ffee")).toBeNull();
      await saveGraph();
      const { run } = await store.createRunIfAbsent(newRun({ codeVersion: "c0ffee", tasks: tasksOf(["a"]) }));
      expect(run.codeVersion).toBe("c0ffee");
      expect((await store.getRun(run.runId))?.codeVersion).toBe("c0ffee");
      const [attempt] = await claim();
      expect(attempt).toMatchObject({ taskId: "a", codeVersion: "c0ffee" });
      await store.createRunIfAbsent(newRun({ businessDate: "2026-09-02", tasks: tasksOf(["a"]) }));
      expect((await store.getRun("p@2026-09-02"))?.codeVersion).toBeNull();
    });

    it("lists a pipeline's code versions oldest first, each with the runs pinned to it", async () => {
      const version = (codeVersion: string, createdAt: number) => ({
        pipelineId: "p", codeVersion, graphVersion: "v1", file: "pipelines/p.ts", location: "/b", packages: {}, createdAt, createdBy: null,
      });
      await store.saveCodeVersion(version("c2", T0 + 10));
      await store.saveCodeVersion(version("c1", T0));
      await store.saveCodeVersion({ ...version("c9", T0), pipelineId: "other" });
      await saveGraph();
      for (const day of ["2026-09-01", "2026-09-03"]) await store.createRunIfAbsent(newRun({ businessDate: day, codeVersion: "c1", tasks: tasksOf(["a"]) }));
      await claim(10, T0 + 5);
      const listed = await store.listCodeVersions("p");
      expect(listed.map((v) => [v.codeVersion, v.runs, v.firstDate, v.lastDate])).toEqual([["c1", 2, "2026-09-01", "2026-09-03"], ["c2", 0, null, null]]);
      expect(listed[0]!.firstRanAt).toBe(T0 + 5);
      expect(listed[1]!.firstRanAt).toBeNull();
      expect(await store.listCodeVersions("nope")).toEqual([]);
    });

    it("collects a code version only when no run needs it, pins no run to a collected one, and takes it back when stored again", async () => {
      const c1 = { pipelineId: "p", codeVersion: "c1", graphVersion: "flat", file: "pipelines/p.ts", location: "/b", packages: {}, createdAt: T0, createdBy: null };
      const collect = (keepRunsSince: number) => store.collectCodeVersion({ pipelineId: "p", codeVersion: "c1", keepRunsSince, at: T0 + 2000 });
      await store.saveCodeVersion(c1);
      await saveGraph("flat", []);
      await store.createRunIfAbsent(newRun({ graphVersion: "flat", codeVersion: "c1", tasks: tasksOf(["a", "b"]), createdAt: T0 }));
      expect(await collect(T0 + 1000)).toBe(false);
      for (const a of await claim(10, T0 + 100)) await store.finishAttempt(finish(a, { now: T0 + 100 }));
      expect((await store.getRun("p@2026-09-01"))?.state).toBe("success");
      expect(await collect(T0 + 100)).toBe(false);
      expect(await collect(T0 + 101)).toBe(true);
      expect(await collect(T0 + 101)).toBe(true);
      expect((await store.listCodeVersions("p")).map((v) => [v.codeVersion, v.collectedAt])).toEqual([["c1", T0 + 2000]]);
      expect(await store.collectCodeVersion({ pipelineId: "p", codeVersion: "nope", keepRunsSince: T0, at: T0 })).toBe(false);
      const later = newRun({ businessDate: "2026-09-02", graphVersion: "flat", codeVersion: "c1", tasks: tasksOf(["a"]), createdAt: T0 + 3000 });
      await expect(store.createRunIfAbsent(later)).rejects.toThrow("code version c1 of pipeline p was collected (its bundle removed)");
      expect(await store.getRun("p@2026-09-02")).toBeNull();
      await store.saveCodeVersion({ ...c1, createdAt: T0 + 3000 });
      expect((await store.listCodeVersions("p")).map((v) => [v.codeVersion, v.createdAt, v.collectedAt])).toEqual([["c1", T0, null]]);
      expect((await store.createRunIfAbsent(later)).created).toBe(true);
    });

    it("keeps a run's code version through a rerun, and moves it with its graph when the rerun names one, even for some tasks only", async () => {
      await saveGraph();
      await store.createRunIfAbsent(newRun({ codeVersion: "c1", tasks: tasksOf(["a", "b"], [["a", "b"]]) }));
      for (const attempt of await claim()) await store.finishAttempt(finish(attempt));
      const tasks = tasksOf(["a", "b"], [["a", "b"]]);
      const kept = await store.rerun({ runId: "p@2026-09-01", graphVersion: "v1", tasks, taskIds: ["a"], params: {}, at: T0 + 1 });
      expect(kept).toMatchObject({ codeVersion: "c1", graphVersion: "v1" });
      for (const attempt of await claim()) await store.finishAttempt(finish(attempt));
      const moved = await store.rerun({ runId: "p@2026-09-01", graphVersion: "v2", codeVersion: "c2", tasks, taskIds: ["b"], params: {}, at: T0 + 2 });
      expect(moved).toMatchObject({ codeVersion: "c2", graphVersion: "v2" });
      const [b] = await claim();
      expect(b).toMatchObject({ taskId: "b", codeVersion: "c2", graphVersion: "v2" });
    });

    describe("running a run again", () => {
      async function runToEnd() {
        for (let i = 0; i < 3; i++) for (const attempt of await claim()) await store.finishAttempt(finish(attempt));
      }

      it("resets every task instance and continues the try numbers", async () => {
        await createStandardRun();
        await runToEnd();
        const rerun = await store.rerun({ runId: "p@2026-09-01", graphVersion: "v1", tasks: tasksOf(["a", "b", "c", "d"], [["a", "b"], ["b", "c"], ["a", "d"]]), params: { mode: "append" }, at: T0 + 5_000 });
        expect(rerun).toMatchObject({ state: "queued", endedAt: null, params: { mode: "append" } });
        expect(await states()).toEqual({ a: "queued", b: "scheduled", c: "scheduled", d: "scheduled" });
        const [a] = await claim();
        expect(a).toMatchObject({ taskId: "a", tryNumber: 2, params: { mode: "append" } });
        expect(await store.listAttempts("p@2026-09-01", "a")).toHaveLength(2);
      });

      it("gives the rerun its full retries again", async () => {
        await createStandardRun({ a: { maxTries: 2 } });
        await runToEnd();
        await store.rerun({ runId: "p@2026-09-01", graphVersion: "v1", tasks: tasksOf(["a", "b", "c", "d"], [["a", "b"], ["b", "c"], ["a", "d"]], { a: { maxTries: 2 } }), params: {}, at: T0 });
        const a = (await store.listTaskInstances("p@2026-09-01")).find((t) => t.taskId === "a")!;
        expect(a).toMatchObject({ tryNumber: 1, maxTries: 3 });
      });

      it("can reset chosen tasks only, leaving the rest as they ended", async () => {
        await createStandardRun();
        await runToEnd();
        await store.rerun({ runId: "p@2026-09-01", graphVersion: "v1", tasks: tasksOf(["a", "b", "c", "d"], [["a", "b"], ["b", "c"], ["a", "d"]]), taskIds: ["b", "c"], params: {}, at: T0 });
        expect(await states()).toEqual({ a: "success", b: "queued", c: "scheduled", d: "success" });
      });

      it("is refused while a task of the run is running", async () => {
        await createStandardRun();
        await claim();
        await expect(
          store.rerun({ runId: "p@2026-09-01", graphVersion: "v1", tasks: tasksOf(["a"]), params: {}, at: T0 }),
        ).rejects.toThrow(/running/);
      });

      it("follows a new graph version: new tasks appear, removed tasks go", async () => {
        await createStandardRun();
        await runToEnd();
        const edges = await saveGraph("v2", [["a", "e"]]);
        await store.rerun({ runId: "p@2026-09-01", graphVersion: "v2", tasks: tasksOf(["a", "e"], edges), params: {}, at: T0 });
        expect(await states()).toEqual({ a: "queued", e: "scheduled" });
        expect((await store.getRun("p@2026-09-01"))!.graphVersion).toBe("v2");
      });
    });

    describe("restatements", () => {
      it("runs an ended run again as a restatement: trigger, count and time recorded, try numbers continue", async () => {
        const ended = await endedRun("2026-09-01", T0);
        expect(ended).toMatchObject({ state: "success", restateCount: 0, restatedAt: null, restateNote: null });
        const restated = await restate("2026-09-01", T0 + 10, T0 + 5);
        expect(restated).toMatchObject({ state: "queued", trigger: "restate", triggeredBy: "scheduler", reason: "trailing window", restateCount: 1, restatedAt: T0 + 10 });
        const tries = await claim(10, T0 + 11, "p@2026-09-01");
        expect(tries.map((a) => [a.taskId, a.tryNumber, a.trigger])).toEqual([["a", 2, "restate"], ["b", 2, "restate"]]);
        for (const a of tries) await store.finishAttempt(finish(a, { now: T0 + 12 }));
        expect((await restate("2026-09-01", T0 + 20, T0 + 15)).restateCount).toBe(2);
        expect((await store.listRuns({ pipelineId: "p" })).map((r) => r.runId)).toEqual(["p@2026-09-01"]);
      });

      it("refuses a run that is live, or that ended at or after the interval asking for it fired", async () => {
        await endedRun("2026-09-01", T0 + 100);
        await expect(restate("2026-09-01", T0 + 200, T0 + 100)).rejects.toThrow(/already ran after/);
        await restate("2026-09-01", T0 + 200, T0 + 150);
        await expect(restate("2026-09-01", T0 + 201, T0 + 150)).rejects.toThrow(/is queued; it is not restated while live/);
        expect((await store.getRun("p@2026-09-01"))!.restateCount).toBe(1);
      });

      it("resets only the tasks it is given; the others keep their state and try", async () => {
        await endedRun("2026-09-01", T0);
        await restate("2026-09-01", T0 + 10, T0 + 5, ["a"]);
        expect(await states()).toEqual({ a: "queued", b: "success" });
        const [a] = await claim(10, T0 + 11, "p@2026-09-01");
        expect(a).toMatchObject({ taskId: "a", tryNumber: 2 });
        await store.finishAttempt(finish(a!, { now: T0 + 12 }));
        expect((await store.getRun("p@2026-09-01"))!.state).toBe("success");
        expect((await store.listAttempts("p@2026-09-01", "b")).map((x) => x.tryNumber)).toEqual([1]);
      });

      it("claims a restated run's tasks after a live scheduled run's, whatever their priority", async () => {
        await endedRun("2026-09-01", T0);
        await restate("2026-09-01", T0 + 10, T0 + 5);
        await store.createRunIfAbsent(newRun({ runId: "p@2026-09-02", businessDate: "2026-09-02", graphVersion: "flat", trigger: "schedule", tasks: tasksOf(["a"], [], { a: { priority: -5 } }) }));
        const [first] = await claim(1, T0 + 20);
        expect(first).toMatchObject({ runId: "p@2026-09-02", trigger: "schedule" });
      });
    });

    it("says when the earliest waiting retry of a run is due, and nothing once none waits", async () => {
      await createStandardRun({ a: { maxTries: 3 } });
      expect(await store.nextRetryAt("p@2026-09-01")).toBeNull();
      const [a] = await claim();
      await store.finishAttempt(finish(a!, { outcome: "failed", retryAt: T0 + 9_000 }));
      expect(await store.nextRetryAt("p@2026-09-01")).toBe(T0 + 9_000);
      const [retry] = await claim(10, T0 + 9_000);
      await store.finishAttempt(finish(retry!, { now: T0 + 10_000 }));
      expect(await store.nextRetryAt("p@2026-09-01")).toBeNull();
      expect(await store.nextRetryAt("p@none")).toBeNull();
    });
  });
}
