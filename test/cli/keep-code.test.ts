import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { V1, V2 } from "../support/deployed-twice.ts";
import { processHarness, queryState } from "../support/processes.ts";

const harness = processHarness();
const idem = (...args: string[]) => {
  const result = harness.cliWith({ IDEM_USER: "tester", NO_COLOR: "1", COLUMNS: "400" }, ...args);
  return { code: result.status, out: result.stdout, err: result.stderr };
};

describe("idem keep-code: a run the latest code cannot take finishes on its own code", () => {
  it("is named by why, records the choice as a code-keep audit entry, and refuses a run on the latest code, an unknown run and a missing reason in one line", () => {
    const project = harness.create({ "idem.config.ts": "export default {};\n", "lib/version.ts": `export const CODE = "v1";\n`, "pipelines/pinned.ts": V1 });
    // No worker: the runs stay queued, not over.
    expect(idem("trigger", "pinned", "--date", "2026-09-01", "--reason", "old code").code).toBe(0);
    writeFileSync(join(project, "lib/version.ts"), `export const CODE = "v2";\n`);
    writeFileSync(join(project, "pipelines/pinned.ts"), V2);
    expect(idem("trigger", "pinned", "--date", "2026-09-02", "--reason", "new code").code).toBe(0);
    const versionOf = (runId: string) => queryState<{ code_version: string }>(project, "SELECT code_version FROM runs WHERE run_id = ?", runId)[0]!.code_version;
    const [v1, v2] = [versionOf("pinned@2026-09-01"), versionOf("pinned@2026-09-02")];
    expect(v1).not.toBe(v2);

    const why = idem("why", "pinned@2026-09-01");
    expect(why.code).toBe(0);
    expect(why.out).toContain(`run pinned@2026-09-01 runs its own code (version ${v1}); the latest code (version ${v2}) cannot take it: task load is a command task in it (a function task in the run's); task report is not in it`);
    expect(why.out).toContain(`  idem keep-code pinned@2026-09-01 --reason "..." records that it finishes on its own code; idem clear pinned@2026-09-01 --code latest --reason "..." moves it to the latest once it no longer has to run those tasks\n`);
    expect(idem("why", "pinned@2026-09-02").out).not.toContain("keep-code");

    const noReason = idem("keep-code", "pinned@2026-09-01");
    expect([noReason.code, noReason.err]).toEqual([2, `idem: give --reason "...": manual actions are audited\n`]);

    const kept = idem("keep-code", "pinned@2026-09-01", "--reason", "report must run on the old code");
    expect(kept.err).toBe("");
    expect(kept.code).toBe(0);
    expect(kept.out).toMatch(new RegExp(`^pinned@2026-09-01 finishes on its own code \\(version ${v1}, the latest is ${v2}\\): audit entry #\\d+\\n$`));
    const audit = queryState<{ actor: string; reason: string; details: string }>(project, "SELECT actor, reason, details FROM audit_log WHERE action = 'code-keep' AND run_id = ?", "pinned@2026-09-01");
    expect(audit.map((a) => [a.actor, a.reason, JSON.parse(a.details)])).toEqual([["tester", "report must run on the old code", {
      codeVersion: v1, latest: v2, cannotMove: ["task load is a command task in it (a function task in the run's)", "task report is not in it"],
    }]]);
    expect(versionOf("pinned@2026-09-01")).toBe(v1);

    const latest = idem("keep-code", "pinned@2026-09-02", "--reason", "keep");
    expect([latest.code, latest.err]).toEqual([2, `idem: run pinned@2026-09-02 runs the latest code already (version ${v2}): there is nothing to choose\n`]);
    const unknown = idem("keep-code", "pinned@2026-01-01", "--reason", "keep");
    expect([unknown.code, unknown.err.split("\n").length]).toEqual([2, 2]);
    expect(unknown.err).toContain(`unknown run "pinned@2026-01-01"`);
  });
});
