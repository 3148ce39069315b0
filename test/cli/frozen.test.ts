import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repo = resolve(import.meta.dirname, "../..");
const bin = join(repo, "bin/idem.js");
let project: string;

function idem(...args: string[]) {
  const result = spawnSync(process.execPath, [bin, ...args], {
    cwd: project, encoding: "utf8", env: { ...process.env, IDEM_USER: "tester", NO_COLOR: "1", COLUMNS: "400" }, timeout: 60_000,
  });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

const config = (owner: string) => `import { defineConfig } from "idem";
export default defineConfig({ pipelines: "pipelines", frozen: [{ from: "2026-06-01", to: "2026-06-30", ${owner}reason: "H1 closed" }] });
`;
const sales = (owner: string) => `import { pipeline, daily } from "idem";
export const sales = pipeline("sales", {
  schedule: daily({ at: "02:00" }), start: "2026-09-01",
  frozen: [{ from: "2026-09-08", to: "2026-09-14", owner: "${owner}", reason: "week closed" }],
}, { load: { run: () => ({ rows: 1 }) } });
`;

beforeAll(() => {
  mkdirSync(join(repo, ".tmp"), { recursive: true });
  project = mkdtempSync(join(repo, ".tmp", "cli-frozen-"));
  mkdirSync(join(project, "pipelines"));
  writeFileSync(join(project, "idem.config.ts"), config('owner: "finance", '));
  writeFileSync(join(project, "pipelines/sales.ts"), sales("finance"));
});
afterAll(() => rmSync(project, { recursive: true, force: true }));

describe("frozen periods in the CLI", () => {
  it("shows the owner where frozen dates are refused, and the refused dates in the backfill's audit entry", () => {
    const plan = idem("backfill", "sales", "--from", "2026-09-06", "--to", "2026-09-09", "--dry-run");
    expect(plan.code).toBe(0);
    expect(plan.out).toMatch(/2026-09-08\s+refuse\s+frozen 2026-09-08\.\.2026-09-14 by finance: week closed\s+-\n/);
    expect(idem("backfill", "sales", "--from", "2026-09-06", "--to", "2026-09-09", "--reason", "reload", "--no-follow").code).toBe(0);
    const audit = idem("audit", "--pipeline", "sales");
    expect(audit.out.split("\n")[0]).toMatch(/\bDETAILS$/);
    expect(audit.out).toContain("2026-09-06..2026-09-09: 2 to run, 0 left; refused 2026-09-08..2026-09-09 (frozen 2026-09-08..2026-09-14 by finance: week closed)");
  });

  it("lists a pipeline's frozen periods with owner, reason and where declared, and records a change of them", () => {
    const before = idem("frozen", "sales");
    expect(before.code).toBe(0);
    expect(before.out).toMatch(/^FROM\s+TO\s+OWNER\s+REASON\s+DECLARED IN\n2026-09-08\s+2026-09-14\s+finance\s+week closed\s+sales\n2026-06-01\s+2026-06-30\s+finance\s+H1 closed\s+idem\.config\.ts\n/);
    writeFileSync(join(project, "pipelines/sales.ts"), sales("controlling"));
    const after = idem("frozen", "sales");
    expect(after.out).toMatch(/changes, newest first:\n\S+ \(seen by tester\) the frozen periods of sales changed \(graph version [0-9a-f]{16} -> [0-9a-f]{16}\): changed frozen 2026-09-08\.\.2026-09-14: owner finance -> controlling\n/);
    const json = JSON.parse(idem("audit", "--pipeline", "sales", "--json").out) as { action: string; details: { changed?: unknown[] } }[];
    expect(json.filter((e) => e.action === "frozen-periods").map((e) => e.details.changed?.length ?? 0)).toEqual([1, 0]);
  });

  it("clears a run of a frozen date only with --open-frozen, which the audit entry keeps", () => {
    expect(idem("trigger", "sales", "--date", "2026-09-10", "--reason", "first load", "--open-frozen", "agreed").code).toBe(0);
    const refused = idem("clear", "sales@2026-09-10", "--reason", "again");
    expect([refused.code, refused.err]).toEqual([2, expect.stringMatching(/^idem: pipeline sales: 2026-09-10 is frozen 2026-09-08\.\.2026-09-14 by \w+: week closed; give --open-frozen "<reason>" to run it anyway\n$/)]);
    const cleared = idem("clear", "sales@2026-09-10", "--reason", "again", "--open-frozen", "finance agreed (ticket 82)");
    expect([cleared.code, cleared.out]).toEqual([0, "cleared sales@2026-09-10: load\n"]);
    const [entry] = JSON.parse(idem("audit", "--pipeline", "sales", "--json").out) as { action: string; details: { openFrozen?: string } }[];
    expect(entry).toMatchObject({ action: "clear", details: { openFrozen: "finance agreed (ticket 82)" } });
  });

  it("refuses a frozen period without an owner with one line naming the file and the field, exit 2", () => {
    writeFileSync(join(project, "idem.config.ts"), config(""));
    const result = idem("validate");
    expect([result.code, result.err]).toEqual([2, expect.stringMatching(/^idem: \S*idem\.config\.ts:2: frozen\[0\]\.owner: missing\n$/)]);
    writeFileSync(join(project, "idem.config.ts"), config('owner: "finance", '));
    writeFileSync(join(project, "pipelines/sales.ts"), sales("").replace('owner: "", ', ""));
    const pipelineFile = idem("validate");
    expect([pipelineFile.code, pipelineFile.err]).toEqual([2, 'idem: pipelines/sales.ts:4: pipeline sales: frozen[0].owner: a frozen period needs an owner (who answers for it, e.g. "finance")\n']);
  });
});
