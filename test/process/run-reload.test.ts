import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { processHarness, queryState, repo, waitFor } from "../support/processes.ts";

const here = processHarness();

const CONFIG = `import { defineConfig } from "idem";\nexport default defineConfig({ reloadMs: 200 });\n`;
/** `wait` holds the run until the test creates the file `go`; `report` says which version of the file it runs. */
const version = (n: number, extra = "") => `import { existsSync } from "node:fs";
import { pipeline } from "idem";
export const edited = pipeline("edited", {}, {
  wait: { run: async () => { while (!existsSync("go")) await new Promise((r) => setTimeout(r, 50)); } },
  report: { after: ["wait"], run: (ctx) => { ctx.log.info("file version ${n}"); } },${extra}
});
`;

/** `idem run` in the background: its exit code and output once it ends. */
function runInBackground(): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [join(repo, "bin/idem.js"), "run", "edited", "--date", "2026-09-01"], { cwd: here.project, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, out })));
}

const started = () => waitFor("the first task to start", () => queryState(here.project, "SELECT 1 FROM attempts WHERE task_id = 'wait'")[0], 30_000);

describe("idem run reloads pipeline files, as workers do", () => {
  it("runs every task on the code and graph the run was created with, though the file changed (the run keeps its code)", async () => {
    here.create({ "idem.config.ts": CONFIG, "pipelines/edited.ts": version(1) });
    const run = runInBackground();
    await started();
    // Changed while `wait` runs: `report` still runs the run's code; the new task is not part of this run.
    writeFileSync(join(here.project, "pipelines/edited.ts"), version(2, `\n  added: { after: ["report"], run: () => {} },`));
    await new Promise((r) => setTimeout(r, 1_500)); // several reloads
    writeFileSync(join(here.project, "go"), "");
    const { code, out } = await run;
    expect(code, out).toBe(0);
    const logs = here.cli("logs", "edited@2026-09-01", "report");
    expect(logs.stdout).toContain("INFO file version 1");
    expect(queryState<{ task_id: string }>(here.project, "SELECT task_id FROM task_instances ORDER BY task_id").map((t) => t.task_id)).toEqual(["report", "wait"]);
  }, 90_000);

  it("ends with exit 2, naming the pipeline, when its file stops defining it during the run", async () => {
    here.create({ "idem.config.ts": CONFIG, "pipelines/edited.ts": version(1) });
    const run = runInBackground();
    await started();
    writeFileSync(join(here.project, "pipelines/edited.ts"), `import { pipeline } from "idem";\nexport const other = pipeline("other", {}, { t: { run: () => {} } });\n`);
    await new Promise((r) => setTimeout(r, 1_500));
    writeFileSync(join(here.project, "go"), "");
    const { code, out } = await run;
    expect(code, out).toBe(2);
    expect(out).toMatch(/pipeline edited is no longer defined by its file \(removed while run edited@2026-09-01 ran\)/);
    expect(existsSync(join(here.project, "go"))).toBe(true);
  }, 90_000);
});
