import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { FakeClock } from "../../src/testing.ts";
import { openTestEngine, type TestEngine } from "../support/engine.ts";
import { call, testApp } from "../support/http.ts";

let t: TestEngine;
afterEach(async () => t?.close());

describe("the HTTP API: a mapped task's instances by key", () => {
  it("pages them in key order with a filter, and answers a bad state with a problem naming the field", async () => {
    const p = pipeline("files", { schedule: daily({ at: "02:00", timezone: "UTC" }) }, {
      load: { map: { items: () => ["c", "a", "b", "bb"] }, run: (ctx) => { if (ctx.mapKey === "b") throw new Error("b is broken"); return { key: ctx.mapKey }; } },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    await t.engine.runForDate("files", "2026-09-01");
    const token = (await t.engine.createToken({ name: "victor", role: "viewer", actor: "root" })).secret;
    const app = testApp(t.engine);
    const base = "/api/v1/runs/files@2026-09-01/tasks/load/instances";
    const first = await call(app, `${base}?limit=2`, { token });
    expect(first.status).toBe(200);
    expect(first.body.items.map((i: { key: string; state: string }) => [i.key, i.state])).toEqual([["a", "success"], ["b", "failed"]]);
    expect(first.body.next).toBe("b");
    const rest = await call(app, `${base}?limit=2&after=b`, { token });
    expect(rest.body).toMatchObject({ items: [{ key: "bb", taskId: "load[bb]", summary: { key: "bb" } }, { key: "c", position: 0 }], next: "c" });
    expect((await call(app, `${base}?prefix=b&state=success`, { token })).body.items.map((i: { key: string }) => i.key)).toEqual(["bb"]);
    const bad = await call(app, `${base}?state=done`, { token });
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ field: "state" });
    expect(bad.body.detail).toContain("unknown state done");
  });

  it("a backfill preview counts each mapped task's instances from the item counts of its completed runs, in the API and the UI", async () => {
    const p = pipeline("files", { schedule: daily({ at: "02:00", timezone: "UTC" }) }, {
      load: { map: { items: (ctx) => Array.from({ length: ctx.businessDate === "2026-09-02" ? 4 : 2 }, (_, i) => `f${i}`) }, run: () => ({ ok: true }) },
      check: { after: ["load"], map: { items: { keysOf: "load" } }, run: () => ({ ok: true }) },
      fresh: { map: { items: () => ["x"] }, run: () => ({ ok: true }) },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-05T03:00:00Z"));
    for (const day of ["2026-09-01", "2026-09-02", "2026-09-03"]) await t.engine.runForDate("files", day);
    const token = (await t.engine.createToken({ name: "victor", role: "viewer", actor: "root" })).secret;
    const app = testApp(t.engine);
    const preview = await call(app, "/api/v1/backfills/preview", { token, body: { pipelineId: "files", from: "2026-09-04", to: "2026-09-04", reprocess: "none", tasks: "load|check" } });
    expect(preview.status).toBe(200);
    expect(preview.body.mapped).toEqual({
      dates: 1, instances: 4, tasksWithoutHistory: [],
      tasks: [{ taskId: "load", perDate: 2, last: 2, runsSeen: 3, instances: 2 }, { taskId: "check", perDate: 2, last: 2, runsSeen: 3, instances: 2 }],
      basis: "estimate: the median item count of each mapped task in its last 20 completed runs, times 1 date",
    });
    const page = await call(app, "/ui/backfills/new?pipeline=files&from=2026-09-04&to=2026-09-04&reprocess=all", { token });
    expect(page.status).toBe(200);
    const html = page.body as string;
    expect(html).toContain("Mapped work (estimate)");
    expect(html).toMatch(/<td class="mono">load<\/td><td>~2<\/td><td>2<\/td><td>3<\/td><td>~2<\/td>/);
  });

  it("marks every instance a key pattern matches, audited with the keys, and refuses a pattern that can name no key with a problem naming the field", async () => {
    const p = pipeline("files", { schedule: daily({ at: "02:00", timezone: "UTC" }) }, {
      load: { map: { items: () => ["a1", "a2", "b"] }, run: (ctx) => { if (ctx.mapKey!.startsWith("a")) throw new Error("a is broken"); } },
      report: { after: ["load"], run: () => ({ ok: true }) },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    await t.engine.runForDate("files", "2026-09-01");
    const token = (await t.engine.createToken({ name: "olga", role: "operator", actor: "root" })).secret;
    const app = testApp(t.engine);
    const mark = (task: string) => call(app, `/api/v1/runs/files@2026-09-01/tasks/${encodeURIComponent(task)}/mark`, { token, body: { state: "success", reason: "loaded by hand" } });
    const marked = await mark("load[a*]");
    expect(marked.status).toBe(200);
    expect(marked.body).toMatchObject({
      task: { taskId: "load", state: "success" },
      audit: { action: "mark-success", taskId: "load[a*]", details: { keys: ["a1", "a2"], keyCount: 2, markedCount: 2 } },
    });
    expect(Object.fromEntries((await t.engine.taskInstances("files@2026-09-01")).map((i) => [i.taskId, i.state]))).toMatchObject({ "load[a1]": "success", "load[a2]": "success", report: "queued" });
    const bad = await mark("load[a\\]");
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ field: "taskId", detail: "load[a\\]: ends in \\ with nothing after it to make literal (\\\\ names a backslash)" });
    const none = await mark("load[zz*]");
    expect(none.status).toBe(409);
    expect(none.body.detail).toContain("no instance of load matches load[zz*]");
    // a clear by key answers what it reset, read by id, not the run's every instance
    const cleared = await call(app, `/api/v1/runs/files@2026-09-01/tasks/${encodeURIComponent("load[a1]")}/clear`, { token, body: { reason: "late file" } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.tasks.map((i: { taskId: string; state: string }) => `${i.taskId} ${i.state}`)).toEqual(["load scheduled", "load[a1] queued", "report scheduled"]);
  });
});
