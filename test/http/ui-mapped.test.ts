import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { FakeClock } from "../../src/testing.ts";
import { openTestEngine, type TestEngine } from "../support/engine.ts";
import { call, testApp } from "../support/http.ts";

let t: TestEngine;
afterEach(async () => t?.close());

/** The pages a mapped run shows when it has run for real (the browser test seeds its 100,000 items). */
describe("the web UI of a mapped run that failed on one key", () => {
  it("names the failed key and its error on call, counts the instances on the grid and the run page, and refuses an unknown state filter", async () => {
    const p = pipeline("files", { schedule: daily({ at: "02:00", timezone: "UTC" }), start: "2026-09-01" }, {
      load: { map: { items: () => ["a", "b", "c"] }, run: (ctx) => { if (ctx.mapKey === "b") throw new Error("b is broken"); return { key: ctx.mapKey }; } },
      report: { after: ["load"], run: () => ({}) },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    await t.engine.runForDate("files", "2026-09-01");
    const token = (await t.engine.createToken({ name: "victor", role: "viewer", actor: "root" })).secret;
    const app = testApp(t.engine);
    const page = async (path: string) => {
      const response = await call(app, path, { token });
      expect(response.status, path).toBe(200);
      return response.body as string;
    };

    // On call: the mapped task failed because load[b] did; its error is the run's line.
    const oncall = await page("/ui");
    expect(oncall).toContain('href="/ui/runs/files@2026-09-01/tasks/load%5Bb%5D?try=1">load[b]</a>');
    expect(oncall).toContain("b is broken");

    const grid = await page("/ui/pipelines/files/grid?days=30&to=2026-09-01");
    expect(grid).toContain('<a class="c s-failed mapped" data-mapped href="/ui/runs/files@2026-09-01/tasks/load/instances" title="3 mapped instances: 1 failed, 2 success"');

    const run = await page("/ui/runs/files@2026-09-01");
    expect(run).toMatch(/<a class="b s-failed" href="\/ui\/runs\/files@2026-09-01\/tasks\/load\/instances\?state=failed">failed <b>1<\/b><\/a>/);
    expect(run).not.toContain("load[a]");

    // The graph's node of the mapped task opens its keys, coloured by the failed one.
    const graph = await page("/ui/pipelines/files/graph?run=files@2026-09-01");
    expect(graph).toMatch(/<a href="\/ui\/runs\/files@2026-09-01\/tasks\/load\/instances"><g class="node s-failed"[^>]*>\s*<title>load: failed/);
    expect(graph).toContain("failed · 3 mapped");

    const keys = await page("/ui/runs/files@2026-09-01/tasks/load/instances?state=failed");
    expect(keys.match(/<td class="key mono">/g)).toHaveLength(1);
    expect(keys).toContain(">b</a>");

    const bad = await call(app, "/ui/runs/files@2026-09-01/tasks/load/instances?state=done", { token });
    expect(bad.status).toBe(422);
    expect(bad.body).toContain("state=done: expected one of scheduled, queued");
  });
});
