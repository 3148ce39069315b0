import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { processHarness, queryState } from "../support/processes.ts";

const harness = processHarness();

/**
 * What task code reports about its own process: its loader threads (tsx's module hooks run in
 * one, which the diagnostic report lists among the workers), the flags it was started with
 * (tsx given at boot), and where its own stack says it is.
 */
const probe = `() => ({
  loaderThreads: process.report.getReport().workers.length,
  execArgv: process.execArgv.join(" "),
  where: new Error("here").stack.split("\\n")[1].trim(),
})`;

function summaries(project: string): Record<string, { loaderThreads: number; execArgv: string; where: string }> {
  const rows = queryState<{ task_id: string; summary: string }>(project, "SELECT task_id, summary FROM attempts WHERE state = 'success'");
  return Object.fromEntries(rows.map((r) => [r.task_id, JSON.parse(r.summary)]));
}

/** A pipeline file whose import is computed at run time: it cannot be bundled. */
const Q_FILE = `import { pipeline } from "idem";
const path = ["..", "lib", "helper.ts"].join("/");
const { probe } = await import(path);
export const q = pipeline("q", {}, { computed: { run: () => probe() } });
`;

describe("a task host's boot", () => {
  it("imports a pipeline file as its bundle (compiled with the modules it imports) with no loader thread, and its stacks name the .ts files and lines", () => {
    const project = harness.create({
      "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({});\n`,
      "lib/where.ts": `export const probe = ${probe};\n`,
      "pipelines/p.ts": `import { pipeline } from "idem";
import { probe } from "../lib/where.ts";
const typed: number = 1;
export const p = pipeline("p", {}, {
  here: { run: ${probe} },
  imported: { run: () => probe() },
});
`,
    });
    const run = harness.cli("run", "p", "--date", "2026-09-01");
    expect(run.status, run.stderr).toBe(0);
    const { here, imported } = summaries(project);
    expect(here!.loaderThreads).toBe(0);
    expect(here!.execArgv).not.toMatch(/tsx/);
    // Line 8 of the pipeline file, line 4 of the module it imports: the source maps of the copies.
    expect(here!.where).toMatch(/pipelines\/p\.ts:8:\d+/);
    expect(imported!.where).toMatch(/lib\/where\.ts:4:\d+/);
  });

  it("bundles a template import of local files whole, and loads tsx, then, only for a file whose import is computed at run time", () => {
    const project = harness.create({
      "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({});\n`,
      "lib/helper.ts": `export const probe = ${probe};\n`,
      "pipelines/p.ts": `import { pipeline } from "idem";
const name = "helper";
const { probe } = await import(\`../lib/\${name}.ts\`);
export const p = pipeline("p", {}, { templated: { run: () => probe() } });
`,
    });
    // One at a time: a host preloads every pipeline file of the project, and q's would load tsx.
    for (const id of ["p", "q"]) {
      if (id === "q") writeFileSync(join(project, "pipelines/q.ts"), Q_FILE);
      const run = harness.cli("run", id, "--date", "2026-09-01");
      expect(run.status, run.stderr).toBe(0);
    }
    const { templated, computed } = summaries(project);
    expect(templated!.loaderThreads).toBe(0);
    expect(templated!.where).toMatch(/lib\/helper\.ts:4:\d+/);
    expect(computed!.loaderThreads).toBe(1);
    expect(computed!.where).toMatch(/lib\/helper\.ts:4:\d+/);
    // A file that cannot be bundled runs as before: its runs name no code version.
    expect(queryState<{ pipeline_id: string; pinned: number }>(project, "SELECT pipeline_id, code_version IS NOT NULL AS pinned FROM runs ORDER BY pipeline_id")).toEqual([
      { pipeline_id: "p", pinned: 1 }, { pipeline_id: "q", pinned: 0 },
    ]);
  });
});
