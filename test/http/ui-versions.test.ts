import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openProject } from "../../src/engine/compose.ts";
import type { Engine } from "../../src/engine/engine.ts";
import { loadConfig } from "../../src/engine/project/config.ts";
import { call, testApp } from "../support/http.ts";
import { makeProject, removeProject } from "../support/processes.ts";

/** Version 1: two function tasks. Version 2: load is a command, report is gone, publish is new. */
const V1 = `import { pipeline } from "idem";
import { CODE } from "../lib/version.ts";
// first deploy: <script>alert("x")</script> & co
export const pinned = pipeline("pinned", {}, {
  load: { run: () => ({ code: CODE }) },
  report: { after: ["load"], run: () => ({ code: CODE }) },
});
`;
const V2 = `import { pipeline } from "idem";
import { CODE } from "../lib/version.ts";
// second deploy
export const pinned = pipeline("pinned", {}, {
  load: { command: ["true"] },
  publish: { after: ["load"], run: () => ({ code: CODE }) },
});
`;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A project whose pipeline ran once on version 1, then was deployed as version 2 and ran again. */
async function deployedTwice(): Promise<{ engine: Engine; v1: string; v2: string }> {
  const project = makeProject({ "idem.config.ts": `export default {};\n`, "lib/version.ts": `export const CODE = "v1";\n`, "pipelines/pinned.ts": V1 });
  cleanups.push(() => removeProject(project));
  const engine = await openProject(await loadConfig(project), { pipelines: true });
  cleanups.push(() => engine.close());
  const first = await engine.trigger("pinned", "2026-09-01", { reason: "old code", actor: "ana" });
  writeFileSync(join(project, "lib/version.ts"), `export const CODE = "v2";\n`);
  writeFileSync(join(project, "pipelines/pinned.ts"), V2);
  await engine.catalog.refresh();
  const second = await engine.trigger("pinned", "2026-09-02", { reason: "new code", actor: "bo" });
  expect(first.codeVersion).toMatch(/^[0-9a-f]{20}$/);
  expect(second.codeVersion).not.toBe(first.codeVersion);
  return { engine, v1: first.codeVersion!, v2: second.codeVersion! };
}

describe("a pipeline's code versions in the web UI", () => {
  it("lists the versions newest first with who recorded them, when they first ran and their runs, and diffs two of them: graph and escaped sources", async () => {
    const { engine, v1, v2 } = await deployedTwice();
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
    const { engine, v1, v2 } = await deployedTwice();
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
});
