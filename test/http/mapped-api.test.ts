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
  });
});
