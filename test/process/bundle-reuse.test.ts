import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { processHarness, queryState } from "../support/processes.ts";

const harness = processHarness();
const { cli } = harness;

const PIPELINE = `import { pipeline } from "idem";
import { CODE } from "../lib/version.ts";
export const reused = pipeline("reused", {}, { only: { run: () => ({ code: CODE }) } });
`;

const versionOf = (project: string, runId: string) =>
  queryState<{ code_version: string }>(project, "SELECT code_version FROM runs WHERE run_id = ?", runId)[0]?.code_version;

describe("a process loading unchanged pipeline files takes their remembered build (real processes)", () => {
  it("remembers the build, gives the same version again, and a new one when only an imported module changed", async () => {
    const project = harness.create({ "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({});\n`, "lib/version.ts": `export const CODE = "v1";\n`, "pipelines/reused.ts": PIPELINE });
    // Files written within a second of a build are not remembered with it: the project settles first.
    await new Promise((r) => setTimeout(r, 1_100));
    const trigger = (date: string) => {
      const result = cli("trigger", "reused", "--date", date, "--reason", "test");
      expect(result.status, result.stderr).toBe(0);
    };
    trigger("2026-09-01");
    expect(readdirSync(join(project, ".idem", "cache", "bundles", "builds"))).toHaveLength(1);
    trigger("2026-09-02");
    const first = versionOf(project, "reused@2026-09-01");
    expect(first).toMatch(/^[0-9a-f]{20}$/);
    expect(versionOf(project, "reused@2026-09-02")).toBe(first);

    writeFileSync(join(project, "lib/version.ts"), `export const CODE = "v2";\n`);
    trigger("2026-09-03");
    const changed = versionOf(project, "reused@2026-09-03");
    expect(changed).toMatch(/^[0-9a-f]{20}$/);
    expect(changed).not.toBe(first);
    expect(queryState(project, "SELECT code_version FROM code_versions")).toHaveLength(2);
  }, 60_000);
});
