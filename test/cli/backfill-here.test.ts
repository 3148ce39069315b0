import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repo = resolve(import.meta.dirname, "../..");
const bin = join(repo, "bin/idem.js");
let project: string;

function idem(...args: string[]) {
  const result = spawnSync(process.execPath, [bin, ...args], {
    cwd: project, encoding: "utf8", env: { ...process.env, IDEM_USER: "tester", NO_COLOR: "1" }, timeout: 120_000,
  });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

beforeAll(() => {
  mkdirSync(join(repo, ".tmp"), { recursive: true });
  project = mkdtempSync(join(repo, ".tmp", "cli-backfill-here-"));
  mkdirSync(join(project, "pipelines"));
  writeFileSync(join(project, "idem.config.ts"), `import { defineConfig } from "idem";\nexport default defineConfig({ pipelines: "pipelines" });\n`);
  writeFileSync(join(project, "pipelines/sales.ts"), `import { pipeline, daily } from "idem";
export const sales = pipeline("sales", { schedule: daily({ at: "02:00" }), start: "2026-09-01" }, {
  extract: { run: () => ({ rows: 1 }) },
  load: { after: ["extract"], run: () => ({ rows: 1 }) },
});
`);
});
afterAll(() => rmSync(project, { recursive: true, force: true }));

describe("idem backfill with no scheduler running", () => {
  it("runs only the backfill's runs here, leaving other queued manual runs queued and untouched", () => {
    expect(idem("trigger", "sales", "--date", "2026-09-05", "--reason", "for the workers").code).toBe(0);
    const backfill = idem("backfill", "sales", "--from", "2026-09-01", "--to", "2026-09-03", "--reason", "first fill");
    expect([backfill.code, backfill.err]).toEqual([0, ""]);
    expect(backfill.out).toContain("no scheduler is running: running this backfill here");
    expect(backfill.out).toMatch(/backfill bf_[0-9a-f]+ completed at /);
    const runs = JSON.parse(idem("runs", "sales", "--json").out) as { runId: string; state: string; trigger: string }[];
    expect(runs.map((r) => `${r.runId} ${r.trigger} ${r.state}`)).toEqual([
      "sales@2026-09-05 manual queued", "sales@2026-09-03 backfill success", "sales@2026-09-02 backfill success", "sales@2026-09-01 backfill success",
    ]);
    const manual = JSON.parse(idem("tasks", "sales@2026-09-05", "--json").out) as { taskId: string; state: string; tryNumber: number }[];
    expect(manual.map((t) => `${t.taskId} ${t.state} ${t.tryNumber}`)).toEqual(["extract queued 0", "load scheduled 0"]);
  });
});
