import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { FakeClock } from "../../src/testing.ts";
import { openTestEngine, type TestEngine } from "../support/engine.ts";

let t: TestEngine;
afterEach(async () => t?.close());

const utc = daily({ at: "02:00", timezone: "UTC" });
const RUN = "files@2026-09-01";

describe("fan-out: a task mapped over a list found when it becomes eligible", () => {
  it("runs one instance per item of an upstream task's summary field, each with its key and item, then the reduce", async () => {
    const seen: string[] = [];
    const p = pipeline("files", { schedule: utc }, {
      list: { run: () => ({ files: ["b.csv", "a.csv", "c.csv"] }) },
      load: {
        after: ["list"],
        map: { items: { task: "list", field: "files" } },
        run: (ctx) => {
          seen.push(`${ctx.taskId}:${ctx.mapKey}:${String(ctx.item)}`);
          return { rows: (ctx.mapKey ?? "").length };
        },
      },
      report: {
        after: ["load"],
        // A reduce reads every instance's summary, a page at a time.
        run: async (ctx) => {
          const rows: Record<string, unknown> = {};
          let pages = 0;
          for (let after: string | undefined; ; pages++) {
            const page = await ctx.mapped("load", { after, limit: 2 });
            for (const i of page.instances) rows[i.key] = (i.summary as { rows: number }).rows;
            if (page.next === null) break;
            after = page.next;
          }
          return { instances: (ctx.upstream.load as { items: number }).items, rows, pages };
        },
      },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    const result = await t.engine.runForDate("files", "2026-09-01");
    expect(result.run.state).toBe("success");
    expect(seen.sort()).toEqual(["load:a.csv:a.csv", "load:b.csv:b.csv", "load:c.csv:c.csv"]);
    const states = Object.fromEntries(result.tasks.map((x) => [x.taskId, x.state]));
    expect(states).toEqual({ list: "success", load: "success", "load[a.csv]": "success", "load[b.csv]": "success", "load[c.csv]": "success", report: "success" });
    const [report] = await t.store.listAttempts(RUN, "report");
    expect(report!.summary).toEqual({ instances: 3, rows: { "a.csv": 5, "b.csv": 5, "c.csv": 5 }, pages: 1 });
    const page = await t.store.pageMappedInstances({ runId: RUN, taskId: "load", limit: 10 });
    expect(page.map((i) => [i.key, i.summary])).toEqual([["a.csv", { rows: 5 }], ["b.csv", { rows: 5 }], ["c.csv", { rows: 5 }]]);
  });

  it("chains a task mapped by key: each key's check runs after that key's load, with that key's summary upstream", async () => {
    const order: string[] = [];
    const p = pipeline("files", { schedule: utc }, {
      load: { map: { items: () => ["x", "y"] }, run: (ctx) => { order.push(`load ${ctx.mapKey}`); return { rows: ctx.mapKey === "x" ? 1 : 2 }; } },
      check: {
        after: ["load"],
        map: { items: { keysOf: "load" } },
        run: (ctx) => { order.push(`check ${ctx.mapKey}`); return { checked: (ctx.upstream.load as { rows: number }).rows }; },
      },
      report: { after: ["check"], run: () => ({}) },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    const result = await t.engine.runForDate("files", "2026-09-01");
    expect(result.run.state).toBe("success");
    expect(order.indexOf("check x")).toBeGreaterThan(order.indexOf("load x"));
    expect(order.indexOf("check y")).toBeGreaterThan(order.indexOf("load y"));
    const checks = await t.store.pageMappedInstances({ runId: RUN, taskId: "check", limit: 10 });
    expect(checks.map((i) => [i.key, i.summary])).toEqual([["x", { checked: 1 }], ["y", { checked: 2 }]]);
    expect(() => pipeline("files", { schedule: utc }, {
      load: { run: () => {} },
      check: { after: ["load"], map: { items: { keysOf: "load" }, maxActive: 2 }, run: () => {} },
    })).toThrow(/map.items maps over task load's keys, and load is not mapped/);
  });

  it("runs at most maxActive instances of a task mapped by key at once, every key in the end", async () => {
    let active = 0;
    let most = 0;
    const p = pipeline("files", { schedule: utc }, {
      load: { map: { items: () => ["a", "b", "c", "d", "e", "f"] }, run: () => ({ rows: 1 }) },
      check: {
        after: ["load"],
        map: { items: { keysOf: "load" }, maxActive: 2 },
        run: async () => {
          most = Math.max(most, ++active);
          for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
          active--;
          return { ok: true };
        },
      },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    const result = await t.engine.runForDate("files", "2026-09-01");
    expect(result.run.state).toBe("success");
    expect(most).toBeLessThanOrEqual(2);
    const checks = await t.store.pageMappedInstances({ runId: RUN, taskId: "check", limit: 10 });
    expect(checks.map((i) => `${i.key} ${i.state}`)).toEqual(["a success", "b success", "c success", "d success", "e success", "f success"]);
  });

  it("clears a run with mapped instances, failed ones only or whole: the mapped task runs its list again", async () => {
    let fail = true;
    const runs: string[] = [];
    const p = pipeline("files", { schedule: utc }, {
      load: {
        map: { items: () => ["a", "b"] },
        run: (ctx) => {
          runs.push(ctx.mapKey!);
          if (ctx.mapKey === "b" && fail) throw new Error("b is broken");
        },
      },
      report: { after: ["load"], run: () => {} },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    expect((await t.engine.runForDate("files", "2026-09-01")).run.state).toBe("failed");
    fail = false;
    await t.engine.clear(RUN, { failedOnly: true, downstream: true, reason: "b fixed" });
    const again = await t.engine.runForDate("files", "2026-09-01").catch(() => null);
    const run = again?.run ?? (await t.engine.run(RUN));
    expect(run.state).toBe("success");
    const tries = Object.fromEntries((await t.store.listTaskInstances(RUN)).map((x) => [x.taskId, [x.state, x.tryNumber]]));
    expect(tries).toMatchObject({ load: ["success", 2], "load[a]": ["success", 2], "load[b]": ["success", 2], report: ["success", 1] });
    await t.engine.clear(RUN, { reason: "all again" });
    expect((await t.store.listTaskInstances(RUN)).find((x) => x.taskId === "load")!.state).toBe("queued");
  });

  it("says why a run waits on a mapped task in one line for it, and explains one instance when asked", async () => {
    const clock = new FakeClock("2026-09-02T03:00:00Z");
    const p = pipeline("files", { schedule: utc }, { load: { map: { items: () => ["a", "b"] }, run: () => {} } });
    t = await openTestEngine([p], clock);
    await t.engine.trigger("files", "2026-09-01");
    const [first] = await t.store.claimReady({ workerId: "w", pid: 1, limit: 1, now: clock.now(), leaseMs: 60_000, logDir: t.dir });
    await t.store.finishAttempt({
      attemptId: first!.attemptId, workerId: "w", now: clock.now(), outcome: "success", retryable: false, retryAt: null, exitCode: null,
      errorClass: null, errorMessage: null, summary: null, skipReason: null,
      map: { items: [{ key: "a", item: '"a"' }, { key: "b", item: '"b"' }], maxActive: null },
    });
    const lines = await t.engine.why(RUN);
    expect(lines).toContain("load: waiting for its mapped instances: 2 of 2 still to end");
    expect(lines.some((l) => l.startsWith("load["))).toBe(false);
    expect((await t.engine.why(RUN, "load[a]"))[0]).toMatch(/^load\[a\]: /);
  });

  it("says a chained instance held under maxActive waits for a free place, with how many are active", async () => {
    const clock = new FakeClock("2026-09-02T03:00:00Z");
    const p = pipeline("files", { schedule: utc }, {
      load: { map: { items: () => ["a", "b", "c"] }, run: () => {} },
      check: { after: ["load"], map: { items: { keysOf: "load" }, maxActive: 1 }, run: () => {} },
    });
    t = await openTestEngine([p], clock);
    await t.engine.trigger("files", "2026-09-01");
    const claim = (limit: number) => t.store.claimReady({ workerId: "w", pid: 1, limit, now: clock.now(), leaseMs: 60_000, logDir: t.dir });
    const succeed = (attemptId: number, map: Parameters<TestEngine["store"]["finishAttempt"]>[0]["map"] = undefined) => t.store.finishAttempt({
      attemptId, workerId: "w", now: clock.now(), outcome: "success", retryable: false, retryAt: null, exitCode: null,
      errorClass: null, errorMessage: null, summary: null, skipReason: null, ...(map ? { map } : {}),
    });
    const [load] = await claim(1);
    await succeed(load!.attemptId, {
      items: ["a", "b", "c"].map((k) => ({ key: k, item: JSON.stringify(k) })), maxActive: null,
      chained: [{ taskId: "check", parent: "load", maxActive: 1 }],
    });
    for (const instance of await claim(3)) await succeed(instance.attemptId);
    const held = await t.engine.why(RUN, "check[b]");
    expect(held).toEqual([expect.stringMatching(/^check\[b\]: held by maxActive: 1 of 1 instances of check are active; it is queued when one of them ends \(eligible since /)]);
    expect((await t.engine.why(RUN, "check[a]"))[0]).toMatch(/^check\[a\]: queued/);
  });

  it("keys objects by the key function, retries an instance on its own, and expands a function of the context", async () => {
    const tries = new Map<string, number>();
    const p = pipeline("files", { schedule: utc }, {
      load: {
        retries: 1,
        retryDelay: 0,
        map: { items: (ctx) => [{ id: 1, day: ctx.businessDate }, { id: 2, day: ctx.businessDate }], key: (item: { id: number }) => `customer-${item.id}`, maxActive: 1 },
        run: (ctx) => {
          const n = (tries.get(ctx.mapKey!) ?? 0) + 1;
          tries.set(ctx.mapKey!, n);
          if (ctx.mapKey === "customer-2" && n === 1) throw new Error("flaky");
          return { day: (ctx.item as { day: string }).day };
        },
      },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    const result = await t.engine.runForDate("files", "2026-09-01");
    expect(result.run.state).toBe("success");
    expect(Object.fromEntries(tries)).toEqual({ "customer-1": 1, "customer-2": 2 });
    expect(result.tasks.find((x) => x.taskId === "load[customer-2]")).toMatchObject({ state: "success", tryNumber: 2 });
  });

  it("skips a mapped task whose list is empty, with the reason, and fails one whose list is bad with a data error naming it, expanding nothing", async () => {
    const empty = pipeline("files", { schedule: utc }, {
      load: { map: { items: () => [] }, run: () => {} },
      after_load: { after: ["load"], run: () => {} },
    });
    t = await openTestEngine([empty], new FakeClock("2026-09-02T03:00:00Z"));
    const skipped = await t.engine.runForDate("files", "2026-09-01");
    expect(skipped.run.state).toBe("success");
    expect(skipped.tasks.map((x) => [x.taskId, x.state, x.reason])).toEqual([
      ["load", "skipped", "the list to map over is empty"], ["after_load", "skipped", expect.any(String)],
    ]);
    await t.close();

    const bad = pipeline("files", { schedule: utc }, {
      load: { retries: 3, map: { items: () => ["a", "b", "a"] }, run: () => {} },
    });
    t = await openTestEngine([bad], new FakeClock("2026-09-02T03:00:00Z"));
    const failed = await t.engine.runForDate("files", "2026-09-01");
    expect(failed.run.state).toBe("failed");
    expect(failed.tasks.map((x) => [x.taskId, x.state, x.tryNumber])).toEqual([["load", "failed", 1]]);
    const [attempt] = await t.store.listAttempts("files@2026-09-01", "load");
    expect([attempt!.errorClass, attempt!.errorMessage]).toEqual(["DataError", 'pipeline files, task load, business date 2026-09-01: items 0 and 2 have the same key "a"']);
  });

  it("refuses a map that reads a task it does not run after, and a maxActive that is not a whole number, on the line of map", () => {
    expect(() => pipeline("files", { schedule: utc }, {
      list: { run: () => ({}) },
      load: { map: { items: { task: "list", field: "files" }, maxActive: 0 }, run: () => {} },
    })).toThrow(/map.items reads task list's summary: add "list" to after[\s\S]*map.maxActive must be a whole number >= 1, not 0/);
  });
});
