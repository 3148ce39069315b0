import { spawnSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeProject, queryState, removeProject, repo } from "../support/processes.ts";

let project = "";
afterEach(() => {
  if (project) removeProject(project);
  project = "";
});

const MIB = 1024 * 1024;

describe("a task process's own output is bounded like its console", () => {
  it("caps what a function task writes below console (fd 2 in a loop, a child's inherited stdout), keeping head and tail", () => {
    project = makeProject({
      "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({ logMaxBytes: ${MIB}, secrets: ["RAW_SECRET"] });\n`,
      "pipelines/noisy.ts": `
import { writeSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { pipeline } from "idem";
export const noisy = pipeline("noisy", {}, {
  // 20 MiB straight to the file descriptor, as native code or a runtime report would write it.
  stderr: { run: () => {
    writeSync(2, "FIRST RAW LINE " + process.env.RAW_SECRET + "\\n");
    const block = ("e".repeat(1023) + "\\n").repeat(1024);
    for (let i = 0; i < 20; i++) writeSync(2, block);
    writeSync(2, "LAST RAW LINE\\n");
  } },
  // A child process that inherits the host's stdout: 8 MiB.
  child: { run: () => {
    spawnSync("bash", ["-c", "echo CHILD FIRST; yes oooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooo | head -c 8388608; echo CHILD LAST"], { stdio: "inherit" });
  } },
});
`,
    });
    const run = spawnSync(process.execPath, [join(repo, "bin/idem.js"), "run", "noisy", "--date", "2026-09-01"], {
      cwd: project, encoding: "utf8", maxBuffer: 64 * MIB, env: { ...process.env, RAW_SECRET: "raw-s3cret-value" },
    });
    const said = `idem run said:\n${run.stdout.slice(0, 4000)}\n${run.stderr.slice(0, 4000)}`;
    expect(run.status, said).toBe(0);
    // Nothing of it reached the worker's own output.
    expect(run.stdout.length + run.stderr.length, said).toBeLessThan(10_000);
    for (const task of ["stderr", "child"]) {
      const [attempt] = queryState<{ log_path: string }>(project, "SELECT log_path FROM attempts WHERE task_id = ?", task);
      const size = statSync(attempt!.log_path).size;
      expect(size, task).toBeGreaterThan(MIB - 1);
      expect(size, task).toBeLessThan(MIB + 1_000);
      const log = readFileSync(attempt!.log_path, "utf8");
      expect(log).toMatch(/\[idem: \d+ bytes of the task process's own output dropped here; kept the first 524288 and the last 524288 \(logMaxBytes\)\]/);
      if (task === "stderr") {
        expect(log.startsWith("FIRST RAW LINE ***\n")).toBe(true);
        expect(log.endsWith("e\nLAST RAW LINE\n")).toBe(true);
        expect(log).not.toContain("raw-s3cret-value");
      } else {
        expect(log.startsWith("CHILD FIRST\n")).toBe(true);
        expect(log.endsWith("CHILD LAST\n")).toBe(true);
      }
    }
  });
});
