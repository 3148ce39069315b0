import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { processHarness, queryState, repo } from "../support/processes.ts";

const here = processHarness();

describe("idem backfill with no scheduler about", () => {
  it("runs the backfill's function tasks in task hosts, not in its own loop, with the state store hidden from them", () => {
    here.create({
      "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({});\n`,
      "pipelines/days.ts": `import { pipeline, daily } from "idem";
export const days = pipeline("days", { schedule: daily({ at: "00:00" }), start: "2026-09-01" }, {
  where: { run: (ctx) => { ctx.log.info("pid " + process.pid + " state " + (process.env.IDEM_STATE_URL ?? "hidden")); } },
});
`,
    });
    const stateFile = join(here.project, ".idem", "state.db");
    const backfill = spawnSync(process.execPath, [join(repo, "bin/idem.js"), "backfill", "days", "--from", "2026-09-01", "--to", "2026-09-02", "--reason", "test"], {
      cwd: here.project, encoding: "utf8", env: { ...process.env, IDEM_STATE_URL: stateFile }, timeout: 120_000,
    });
    expect(backfill.status, backfill.stdout + backfill.stderr).toBe(0);
    expect(backfill.stdout).toContain("running this backfill here");
    const paths = queryState<{ log_path: string }>(here.project, "SELECT log_path FROM attempts WHERE task_id = 'where'");
    expect(paths).toHaveLength(2);
    for (const { log_path } of paths) {
      const logs = spawnSync("cat", [log_path], { encoding: "utf8" }).stdout;
      const [, pid, state] = /pid (\d+) state (\S+)/.exec(logs)!;
      expect(Number(pid)).not.toBe(backfill.pid);
      expect(state).toBe("hidden");
    }
  }, 150_000);
});
