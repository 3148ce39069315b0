import { afterEach, describe, expect, it } from "vitest";
import { deployedTwice } from "../support/deployed-twice.ts";
import { call, testApp } from "../support/http.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("a pipeline's code versions in the web UI", () => {
  it("lists the versions newest first with who recorded them, when they first ran and their runs, and diffs two of them: graph and escaped sources", async () => {
    const { engine, v1, v2 } = await deployedTwice(cleanups);
    const app = testApp(engine, "tester");

    const timeline = await call(app, "/ui/pipelines/pinned/versions");
    expect(timeline.status).toBe(200);
    const rows = [...(timeline.body as string).matchAll(/<tr id="v-([0-9a-f]{20})">([\s\S]*?)<\/tr>/g)];
    expect(rows.map((r) => r[1])).toEqual([v2, v1]);
    expect(rows[0]![2]).toContain(">latest</span>");
    expect(rows[0]![2]).toContain("bo");
    expect(rows[0]![2]).toContain(`href="/ui/runs/pinned@2026-09-02"`);
    expect(rows[0]![2]).toContain(`href="/ui/pipelines/pinned/versions/diff?from=${v1}&amp;to=${v2}"`);
    expect(rows[1]![2]).toContain("ana");
    expect(rows[1]![2]).toContain(`href="/ui/runs/pinned@2026-09-01"`);
    expect(rows[1]![2]).not.toContain("pinned@2026-09-02");
    expect(timeline.body).toContain(`aria-current="page">Versions</a>`);

    const diff = await call(app, `/ui/pipelines/pinned/versions/diff?from=${v1.slice(0, 8)}&to=${v2}`);
    expect(diff.status).toBe(200);
    const graph = /<table class="t graphdiff">([\s\S]*?)<\/table>/.exec(diff.body)![1]!;
    expect(graph).toMatch(/<td class="mono">publish<\/td><td><span class="d-add">\+ added<\/span>/);
    expect(graph).toMatch(/<td class="mono">report<\/td><td><span class="d-del">− removed<\/span>/);
    expect(graph).toMatch(/<td class="mono">load<\/td><td><span class="d-chg">~ changed<\/span><\/td><td>kind function -&gt; command; settings<\/td>/);
    expect(diff.body).toContain(`<span class="d-del">-export const CODE = &quot;v1&quot;;</span>`);
    expect(diff.body).toContain(`<span class="d-add">+export const CODE = &quot;v2&quot;;</span>`);
    expect(diff.body).toContain(`-// first deploy: &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co`);
    expect(diff.body).not.toContain(`<script>alert`);

    const version = await call(app, `/ui/pipelines/pinned/versions/${v1}`);
    expect(version.status).toBe(200);
    expect(version.body).toContain(`href="/ui/runs/pinned@2026-09-01"`);
    expect(version.body).toContain(`<code>pipelines/pinned.ts</code>`);
    expect(version.body).toContain(`href="/ui/pipelines/pinned/versions/diff?from=${v1}&amp;to=${v2}"`);

    const run = await call(app, "/ui/runs/pinned@2026-09-01");
    expect(run.body).toContain(`<a class="mono" href="/ui/pipelines/pinned/versions/${v1}">${v1}</a>`);

    const unknown = await call(app, "/ui/pipelines/pinned/versions/diff?from=0000&to=" + v2);
    expect([unknown.status, unknown.body.includes("pipeline pinned has no code version 0000")]).toEqual([404, true]);
    expect((await call(app, "/ui/pipelines/pinned/versions/diff?from=" + v1)).status).toBe(422);
  });

  it("serves the timeline, one version, the runs of one and the diff over /api/v1, with problems naming an unknown version", async () => {
    const { engine, v1, v2 } = await deployedTwice(cleanups);
    const app = testApp(engine, "tester");

    const list = await call(app, "/api/v1/pipelines/pinned/versions");
    expect(list.status).toBe(200);
    expect(list.body.latest).toBe(v2);
    expect(list.body.items.map((v: { codeVersion: string; runs: number; firstDate: string; createdBy: string }) => [v.codeVersion, v.runs, v.firstDate, v.createdBy])).toEqual([[v1, 1, "2026-09-01", "ana"], [v2, 1, "2026-09-02", "bo"]]);

    const one = await call(app, `/api/v1/pipelines/pinned/versions/${v2.slice(0, 6)}`);
    expect([one.status, one.body.codeVersion, one.body.file]).toEqual([200, v2, "pipelines/pinned.ts"]);
    const missing = await call(app, "/api/v1/pipelines/pinned/versions/ffff0000");
    expect([missing.status, missing.type, missing.body.field]).toEqual([404, "application/problem+json", "version"]);

    const runs = await call(app, `/api/v1/pipelines/pinned/runs?code=${v1}`);
    expect(runs.body.items.map((r: { runId: string }) => r.runId)).toEqual(["pinned@2026-09-01"]);
    const noRuns = await call(app, "/api/v1/pipelines/pinned/runs?code=ffff0000");
    expect([noRuns.status, noRuns.body.field, noRuns.body.detail]).toEqual([404, "code", "pipeline pinned has no code version ffff0000 (idem versions pinned lists them)"]);

    const diff = await call(app, `/api/v1/pipelines/pinned/versions/diff?from=${v1}&to=${v2}`);
    expect(diff.status).toBe(200);
    expect(diff.body.graph).toEqual({ added: ["publish"], removed: ["report"], changed: [{ taskId: "load", changes: ["kind function -> command", "settings"] }] });
    expect(diff.body.sources.map((s: { file: string }) => s.file)).toEqual(["lib/version.ts", "pipelines/pinned.ts"]);
    const badTo = await call(app, `/api/v1/pipelines/pinned/versions/diff?from=${v1}&to=0000`);
    expect([badTo.status, badTo.body.field]).toEqual([404, "to"]);
    const noFrom = await call(app, `/api/v1/pipelines/pinned/versions/diff?to=${v2}`);
    expect([noFrom.status, noFrom.body.field]).toEqual([422, "from"]);
  });

  it("states on a live run the tasks the latest code removed or changed the kind of, and offers finishing on its own code (audited) or moving, refused naming them", async () => {
    const { engine, v1, v2 } = await deployedTwice(cleanups);
    const app = testApp(engine, "tester");
    const cannot = ["task load is a command task in it (a function task in the run's)", "task report is not in it"];

    const standing = await call(app, "/api/v1/runs/pinned@2026-09-01/code");
    expect(standing.body).toEqual({ codeVersion: v1, latest: v2, cannotMove: cannot });
    const page = (await call(app, "/ui/runs/pinned@2026-09-01")).body as string;
    const note = /<div class="note bad" id="code-choice" role="note">([\s\S]*?)<div class="choices">/.exec(page)![1]!;
    expect(note).toContain(`cannot take this run</b>: ${cannot.join("; ").replace(/'/g, "&#39;")}. It finishes on its own code`);
    expect(note).toContain(`href="/ui/pipelines/pinned/versions/diff?from=${v1}&amp;to=${v2}"`);
    expect(page).toContain(`action="/ui/runs/pinned@2026-09-01/code/keep"`);
    expect(page).toMatch(/<input type="hidden" name="code" value="latest">/);
    // The local user's writes carry the CSRF token its pages hold.
    const headers = { "x-csrf-token": /name="_csrf" value="([^"]+)"/.exec(page)![1]! };

    const moved = await call(app, "/api/v1/runs/pinned@2026-09-01/clear", { body: { reason: "move it", code: "latest" }, headers });
    expect([moved.status, moved.body.field]).toEqual([422, "code"]);
    expect(moved.body.detail).toContain(`run pinned@2026-09-01 cannot move to the latest code (${v2}): ${cannot.join("; ")}`);

    const kept = await call(app, "/api/v1/runs/pinned@2026-09-01/code/keep", { body: { reason: "report must run on the old code" }, headers });
    expect(kept.status).toBe(200);
    expect(kept.body.audit).toMatchObject({ action: "code-keep", actor: "tester", runId: "pinned@2026-09-01", reason: "report must run on the old code", details: { codeVersion: v1, latest: v2, cannotMove: cannot } });
    expect((await engine.run("pinned@2026-09-01")).codeVersion).toBe(v1);
    expect((await call(app, "/ui/runs/pinned@2026-09-01")).body).toMatch(/id="code-kept">Finishing on its own code: tester chose it at .* \(audit entry #\d+\): report must run on the old code/);

    // A run on the latest code has nothing to choose.
    expect((await call(app, "/ui/runs/pinned@2026-09-02")).body).not.toContain(`id="code-choice"`);
    const nothing = await call(app, "/api/v1/runs/pinned@2026-09-02/code/keep", { body: { reason: "keep" }, headers });
    expect([nothing.status, nothing.body.detail]).toEqual([422, `run pinned@2026-09-02 runs the latest code already (version ${v2}): there is nothing to choose`]);
  });
});
