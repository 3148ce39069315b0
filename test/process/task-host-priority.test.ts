import { spawnSync } from "node:child_process";
import { getPriority } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TASK_HOST_NICENESS } from "../../src/engine/task-host/pool.ts";
import { makeProject, removeProject, repo } from "../support/processes.ts";

let project = "";
afterEach(() => {
  if (project) removeProject(project);
  project = "";
});

describe("task hosts yield the CPU to their worker", () => {
  it("run task code at a lower priority (higher nice) than the process that claims and keeps the leases", () => {
    project = makeProject({
      "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({});\n`,
      "pipelines/p.ts": `import { getPriority } from "node:os";
import { pipeline } from "idem";
export const p = pipeline("p", {}, { nice: { run: () => { console.log("nice=" + getPriority()); } } });
`,
    });
    const cli = (...args: string[]) => spawnSync(process.execPath, [join(repo, "bin/idem.js"), ...args], { cwd: project, encoding: "utf8" });
    const run = cli("run", "p", "--date", "2026-09-01");
    expect(run.status, run.stdout + run.stderr).toBe(0);
    const logs = cli("logs", "p@2026-09-01", "nice");
    expect(logs.stdout).toContain(`nice=${Math.min(19, getPriority() + TASK_HOST_NICENESS)}`);
    expect(TASK_HOST_NICENESS).toBeGreaterThan(0);
  });
});
