import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { processHarness, queryState, waitFor } from "../support/processes.ts";

const harness = processHarness();
const { start, cli } = harness;

const CONFIG = `import { defineConfig } from "idem";
export default defineConfig({ workerLeaseMs: 1500, schedulerLeaseMs: 1500, reloadMs: 300 });
`;

const pipelineFile = (id: string, body: string) => `
import { pipeline, daily } from "idem";
export const p = pipeline("${id}", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-01" }, {
  ${body}
});
`;

describe("pipeline files are reloaded, and a broken one stops only itself", () => {
  it("picks up a pipeline file added while the scheduler and worker run, and runs its task", async () => {
    const project = harness.create({ "idem.config.ts": CONFIG, "pipelines/first.ts": pipelineFile("first", `a: { run: () => ({ v: 1 }) },`) });
    const scheduler = start("scheduler");
    const worker = start("worker");
    await waitFor("the first pipeline's run", () => (queryState<{ state: string }>(project, "SELECT state FROM runs WHERE pipeline_id = 'first'")[0]?.state === "success" ? true : undefined));
    writeFileSync(join(project, "pipelines/cmdp.ts"), pipelineFile("cmdp", `shell: { command: ["bash", "-c", "echo added later"] },`));
    const state = await waitFor("the added pipeline's run to end", () => {
      const run = queryState<{ state: string }>(project, "SELECT state FROM runs WHERE pipeline_id = 'cmdp'")[0];
      return run && (run.state === "success" || run.state === "failed") ? run.state : undefined;
    });
    expect(state).toBe("success");
    expect(queryState(project, "SELECT error_class FROM attempts WHERE error_class IS NOT NULL")).toEqual([]);
    expect(cli("logs", "cmdp@2026-09-01", "shell").stdout).toBe("added later\n");
    expect(worker.output()).toMatch(/pipeline files reloaded: 2 pipeline\(s\); added cmdp/);
    expect(scheduler.output()).toMatch(/added cmdp/);
  });

  it("runs the good pipeline beside a broken file under idem dev, and names the broken file everywhere", async () => {
    const project = harness.create({
      "idem.config.ts": CONFIG,
      "pipelines/good.ts": pipelineFile("good", `a: { run: () => ({ ok: true }) },`),
      "pipelines/typo.ts": `import { pipeline } from "idem";\nexport const t = pipeline("typo", {\n  schedule: ,\n});\n`,
      "pipelines/throws.ts": `\n\nthrow new Error("cannot reach the config service");\n`,
    });
    const validate = cli("validate");
    expect(validate.status).toBe(2);
    expect(validate.stderr).toMatch(/pipelines\/typo\.ts:3: does not compile/);
    expect(validate.stderr).toMatch(/pipelines\/throws\.ts:3: could not load: cannot reach the config service/);
    const dev = start("dev", "--health-port", "0", "--no-serve");
    await waitFor("the good pipeline's run to succeed", () => (queryState<{ state: string }>(project, "SELECT state FROM runs WHERE pipeline_id = 'good'")[0]?.state === "success" ? true : undefined));
    expect(dev.output()).toMatch(/pipeline file not loaded, its pipelines do not run: pipelines\/typo\.ts:3: does not compile/);
    const port = /health on http:\/\/127\.0\.0\.1:(\d+)\/health/.exec(dev.output())![1];
    const served = await (await fetch(`http://127.0.0.1:${port}/health`)).json();
    expect(served.brokenFiles.map((b: { file: string }) => b.file).sort()).toEqual(["pipelines/throws.ts", "pipelines/typo.ts"]);
    const health = cli("health", "--json");
    expect(health.status).toBe(1);
    const report = JSON.parse(health.stdout);
    expect(report.status).toBe("degraded");
    expect(report.brokenFiles.map((b: { file: string; line: number }) => `${b.file}:${b.line}`).sort()).toEqual(["pipelines/throws.ts:3", "pipelines/typo.ts:3"]);
    // Commands that do not need the broken pipelines work.
    expect(cli("runs", "good").status).toBe(0);
    const unknown = cli("runs", "typo");
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown pipeline "typo".*pipelines\/typo\.ts:3/);
    // Fixed while running: picked up, and its run happens.
    writeFileSync(join(project, "pipelines/typo.ts"), pipelineFile("typo", `b: { run: () => {} },`));
    rmSync(join(project, "pipelines/throws.ts"));
    await waitFor("the fixed pipeline's run to succeed", () => (queryState<{ state: string }>(project, "SELECT state FROM runs WHERE pipeline_id = 'typo'")[0]?.state === "success" ? true : undefined));
    expect(dev.output()).toMatch(/pipeline file fixed: pipelines\/typo\.ts/);
  });
});
