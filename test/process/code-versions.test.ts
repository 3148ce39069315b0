import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { processHarness, queryState, waitFor } from "../support/processes.ts";

const harness = processHarness();
const { start, cli } = harness;

const CONFIG = `import { defineConfig } from "idem";
export default defineConfig({ workerLeaseMs: 1500, schedulerLeaseMs: 1500, reloadMs: 200 });
`;

/** The code's version lives in a local module the pipeline file imports: the bundle must carry it. */
const versionModule = (code: string) => `export const CODE = "${code}";\n`;

/**
 * Each task returns the version of the code it ran. `hold` waits for the file `go` (so the test
 * can deploy and kill while the run is half done); the others run at once.
 */
const PIPELINE = (comment: string) => `// ${comment}
import { existsSync } from "node:fs";
import { pipeline } from "idem";
import { CODE } from "../lib/version.ts";
const here = new URL("..", import.meta.url).pathname;
export const pinned = pipeline("pinned", {}, {
  first: { run: () => ({ code: CODE }) },
  hold: { after: ["first"], retries: 2, retryDelay: 0, run: async () => {
    while (!existsSync(here + "go")) await new Promise((r) => setTimeout(r, 50));
    return { code: CODE };
  } },
  after: { after: ["hold"], run: () => ({ code: CODE }) },
  last: { after: ["after"], run: () => ({ code: CODE }) },
});
`;

interface AttemptRow { run_id: string; task_id: string; try_number: number; state: string; error_class: string | null; error_message: string | null; summary: string | null }

const attempts = (project: string, runId: string) =>
  queryState<AttemptRow>(project, "SELECT run_id, task_id, try_number, state, error_class, error_message, summary FROM attempts WHERE run_id = ? ORDER BY attempt_id", runId);
const codeRan = (rows: AttemptRow[]) => rows.filter((a) => a.state === "success").map((a) => `${a.task_id}:${JSON.parse(a.summary!).code}`);
const runEnded = (project: string, runId: string) =>
  waitFor(`run ${runId} to end`, () => {
    const run = queryState<{ state: string }>(project, "SELECT state FROM runs WHERE run_id = ?", runId)[0];
    return run && (run.state === "success" || run.state === "failed") ? run.state : undefined;
  }, 60_000);
const codeVersionOfRun = (project: string, runId: string) => queryState<{ code_version: string | null }>(project, "SELECT code_version FROM runs WHERE run_id = ?", runId)[0]?.code_version;

describe("a run keeps its code (SQLite, real processes)", () => {
  it("runs every remaining attempt of a half-done run on its old code after a deploy and a kill -9; a new run gets the new code", async () => {
    const project = harness.create({ "idem.config.ts": CONFIG, "lib/version.ts": versionModule("v1"), "pipelines/pinned.ts": PIPELINE("first deploy") });
    start("scheduler");
    const worker = start("worker");
    expect(cli("trigger", "pinned", "--date", "2026-09-01", "--reason", "old code").status).toBe(0);
    await waitFor("hold to be running", () => attempts(project, "pinned@2026-09-01").find((a) => a.task_id === "hold" && a.state === "running"));
    const oldVersion = codeVersionOfRun(project, "pinned@2026-09-01")!;
    expect(oldVersion).toMatch(/^[0-9a-f]{20}$/);

    // Deploy: the local module and the pipeline file change while the run is half done.
    writeFileSync(join(project, "lib/version.ts"), versionModule("v2"));
    writeFileSync(join(project, "pipelines/pinned.ts"), PIPELINE("second deploy"));
    await waitFor("the worker to load the new file", () => (/pipeline files reloaded/.test(worker.output()) ? true : undefined));
    await worker.kill9();
    writeFileSync(join(project, "go"), "");
    start("worker");
    expect(await runEnded(project, "pinned@2026-09-01")).toBe("success");
    const old = attempts(project, "pinned@2026-09-01");
    // hold's first try was lost with the worker; its retry and everything after ran the run's code.
    expect(old.filter((a) => a.task_id === "hold").map((a) => a.state)).toEqual(["lost", "success"]);
    expect(codeRan(old)).toEqual(["first:v1", "hold:v1", "after:v1", "last:v1"]);

    expect(cli("trigger", "pinned", "--date", "2026-09-02", "--reason", "new code").status).toBe(0);
    expect(await runEnded(project, "pinned@2026-09-02")).toBe("success");
    expect(codeRan(attempts(project, "pinned@2026-09-02"))).toEqual(["first:v2", "hold:v2", "after:v2", "last:v2"]);
    const newVersion = codeVersionOfRun(project, "pinned@2026-09-02")!;
    expect(newVersion).not.toBe(oldVersion);

    // Both bundles are stored and indexed, with the packages they import.
    const indexed = queryState<{ code_version: string; file: string; packages: string }>(project, "SELECT code_version, file, packages FROM code_versions ORDER BY created_at");
    expect(indexed.map((v) => v.code_version)).toEqual([oldVersion, newVersion]);
    expect(indexed[0]).toMatchObject({ file: "pipelines/pinned.ts" });
    expect(Object.keys(JSON.parse(indexed[0]!.packages))).toEqual(["idem"]);
    expect(readdirSync(join(project, ".idem", "bundles")).sort()).toEqual([`${newVersion}.json`, `${newVersion}.mjs`, `${oldVersion}.json`, `${oldVersion}.mjs`].sort());
  }, 120_000);

  it("fails an attempt whose run's bundle is gone, in one line naming the run, the version and where it looked, and does not retry it", async () => {
    const project = harness.create({ "idem.config.ts": CONFIG, "lib/version.ts": versionModule("v1"), "pipelines/pinned.ts": PIPELINE("first deploy") });
    start("scheduler");
    const worker = start("worker");
    expect(cli("trigger", "pinned", "--date", "2026-09-01", "--reason", "old code").status).toBe(0);
    await waitFor("hold to be running", () => attempts(project, "pinned@2026-09-01").find((a) => a.task_id === "hold" && a.state === "running"));
    const oldVersion = codeVersionOfRun(project, "pinned@2026-09-01")!;
    writeFileSync(join(project, "pipelines/pinned.ts"), PIPELINE("second deploy"));
    await waitFor("the worker to load the new file", () => (/pipeline files reloaded/.test(worker.output()) ? true : undefined));
    await worker.kill9();
    // The old bundle is lost: the stored one and this machine's copy.
    const stored = join(project, ".idem", "bundles", `${oldVersion}.mjs`);
    rmSync(stored);
    rmSync(join(project, ".idem", "cache", "bundles", `${oldVersion}.mjs`));
    writeFileSync(join(project, "go"), "");
    start("worker");
    expect(await runEnded(project, "pinned@2026-09-01")).toBe("failed");
    const hold = attempts(project, "pinned@2026-09-01").filter((a) => a.task_id === "hold");
    // The lost try, then one failure for good: hold had two retries left, and used none.
    expect(hold.map((a) => [a.state, a.error_class])).toEqual([["lost", "LeaseExpired"], ["failed", "DefinitionError"]]);
    expect(hold[1]!.error_message).toBe(`run pinned@2026-09-01: code version ${oldVersion} of pipeline pinned cannot be loaded: not found: looked for ${stored}`);
    expect(existsSync(stored)).toBe(false);
    expect(cli("logs", "pinned@2026-09-01", "hold").stdout).toContain(`looked for ${stored}`);
  }, 120_000);
});
