import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeProject, processHarness, queryState, removeProject, repo, startIdem, waitFor, type Daemon } from "../support/processes.ts";
import { dropSchema, freshSchema, queryPg, schemaUrl, testPostgresUrl } from "./postgres-support.ts";

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
const PIPELINE = (comment: string, last = `{ after: ["after"], run: () => ({ code: CODE }) }`) => `// ${comment}
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
  last: ${last},
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
  it("runs every remaining attempt of a half-done run on its old code after a deploy and a kill -9; a new run gets the new code; a clear keeps the code, a rerun on the latest moves it, unless the run cannot survive the move", async () => {
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
    // The run says it keeps its code, and how it could move.
    expect(cli("why", "pinned@2026-09-01").stdout).toMatch(new RegExp(`run pinned@2026-09-01 runs its own code \\(version ${oldVersion}\\); the latest is version [0-9a-f]{20}: clearing it on the latest code moves it there`));
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
    // `idem runs` names each run's code version.
    const listed = cli("runs", "pinned").stdout;
    expect(listed).toMatch(new RegExp(`pinned@2026-09-02 .*${newVersion}\n`));
    expect(listed).toMatch(new RegExp(`pinned@2026-09-01 .*${oldVersion}\n`));

    // Both bundles are stored and indexed, with the packages they import.
    const indexed = queryState<{ code_version: string; file: string; packages: string }>(project, "SELECT code_version, file, packages FROM code_versions ORDER BY created_at");
    expect(indexed.map((v) => v.code_version)).toEqual([oldVersion, newVersion]);
    expect(indexed[0]).toMatchObject({ file: "pipelines/pinned.ts" });
    expect(Object.keys(JSON.parse(indexed[0]!.packages))).toEqual(["idem"]);
    const timeline = JSON.parse(cli("versions", "pinned", "--json").stdout) as { codeVersion: string; runs: number; firstDate: string; firstRanAt: number | null }[];
    expect(timeline.map((v) => [v.codeVersion, v.runs, v.firstDate])).toEqual([[oldVersion, 1, "2026-09-01"], [newVersion, 1, "2026-09-02"]]);
    expect(timeline.every((v) => v.firstRanAt !== null)).toBe(true);
    expect(cli("versions", "pinned").stdout).toMatch(new RegExp(`${oldVersion}.*idem@`));
    expect(readdirSync(join(project, ".idem", "bundles")).sort()).toEqual([`${newVersion}.json`, `${newVersion}.mjs`, `${oldVersion}.json`, `${oldVersion}.mjs`].sort());

    // A clear runs the old day again on its own code by default...
    expect(cli("clear", "pinned@2026-09-01", "--reason", "again, same code").status).toBe(0);
    expect(await runEnded(project, "pinned@2026-09-01")).toBe("success");
    expect(codeRan(attempts(project, "pinned@2026-09-01")).slice(4)).toEqual(["first:v1", "hold:v1", "after:v1", "last:v1"]);
    // ...and a rerun on the latest code moves it to the new version.
    const latest = cli("run", "pinned", "--date", "2026-09-01", "--code", "latest", "--reason", "again, new code");
    expect(latest.status, latest.stderr).toBe(0);
    expect(codeRan(attempts(project, "pinned@2026-09-01")).slice(8)).toEqual(["first:v2", "hold:v2", "after:v2", "last:v2"]);
    expect(codeVersionOfRun(project, "pinned@2026-09-01")).toBe(newVersion);
    const audit = queryState<{ action: string; details: string }>(project, "SELECT action, details FROM audit_log WHERE run_id = 'pinned@2026-09-01' AND action IN ('clear', 'rerun') ORDER BY id");
    expect(audit.map((a) => [a.action, JSON.parse(a.details).code])).toEqual([
      ["clear", { choice: "same", from: oldVersion, to: oldVersion }],
      ["rerun", { choice: "latest", from: oldVersion, to: newVersion }],
    ]);

    // A deploy the run cannot survive: `last` becomes a command. Moving to it is refused, naming why and the other choice.
    writeFileSync(join(project, "pipelines/pinned.ts"), PIPELINE("third deploy", `{ after: ["after"], command: ["true"] }`));
    const refused = cli("clear", "pinned@2026-09-01", "--task", "after", "--downstream", "--code", "latest", "--reason", "move");
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/run pinned@2026-09-01 cannot move to the latest code \([0-9a-f]{20}\): task last is a command task in it \(a function task in the run's\); --code same finishes it on its own code/);
    expect(cli("clear", "pinned@2026-09-01", "--task", "after", "--downstream", "--reason", "same code").status).toBe(0);
    expect(await runEnded(project, "pinned@2026-09-01")).toBe("success");
    expect(codeRan(attempts(project, "pinned@2026-09-01")).slice(12)).toEqual(["after:v2", "last:v2"]);

    // The diff of the two versions: the same graph; the sources differ in the module and the comment.
    const diff = cli("versions", "pinned", "--diff", oldVersion.slice(0, 8), newVersion);
    expect(diff.status, diff.stderr).toBe(0);
    expect(diff.stdout).toContain(`pipeline pinned, code version ${oldVersion} -> ${newVersion}\ngraph: the same tasks, kinds and dependencies\n`);
    expect(diff.stdout).toContain(`--- ${oldVersion}/lib/version.ts\n+++ ${newVersion}/lib/version.ts\n@@ -1,2 +1,2 @@\n-export const CODE = "v1";\n+export const CODE = "v2";\n`);
    expect(diff.stdout).toContain("-// first deploy\n+// second deploy\n");
    const wrong = cli("versions", "pinned", "--diff", "0000", newVersion);
    expect([wrong.status, wrong.stderr.trim()]).toEqual([2, expect.stringContaining("pipeline pinned has no code version 0000 (idem versions pinned lists them)")]);

    // Collection: the old version has no run left, so its bundle goes, audited; it stays listed, marked.
    const collected = cli("versions", "pinned", "--collect", "--keep-newest", "1", "--keep-days", "0", "--reason", "tidy");
    expect(collected.status, collected.stderr).toBe(0);
    expect(collected.stdout).toMatch(new RegExp(`collected \\d+ bundle\\(s\\) of pinned: .*${oldVersion}`));
    expect(readdirSync(join(project, ".idem", "bundles")).filter((f) => f.startsWith(oldVersion))).toEqual([]);
    const after = JSON.parse(cli("versions", "pinned", "--json").stdout) as { codeVersion: string; collectedAt: number | null }[];
    expect(after.find((v) => v.codeVersion === oldVersion)?.collectedAt).not.toBeNull();
    expect(cli("versions", "pinned").stdout).toContain(`${oldVersion} (collected)`);
    const entry = queryState<{ actor: string; reason: string; details: string }>(project, "SELECT actor, reason, details FROM audit_log WHERE action = 'bundles-collect'");
    expect(entry).toHaveLength(1);
    expect(JSON.parse(entry[0]!.details)).toMatchObject({ retention: { keepNewest: 1, keepDays: 0 }, needed: [] });
    expect(JSON.parse(entry[0]!.details).collected).toContain(oldVersion);
    expect(cli("versions", "pinned", "--diff", oldVersion, newVersion).stderr).toContain(`code version ${oldVersion} of pipeline pinned was collected: its sources are gone`);
    expect(cli("versions", "pinned", "--collect", "--keep-newest", "0").stderr).toMatch(/--keep-newest.*Expected a whole number >= 1/);
  }, 120_000);

  it("backfills run again on the latest code by default, or on each run's own with same; the preview names the version each date will run", async () => {
    const scheduled = (code: string) => `import { pipeline, daily } from "idem";
import { CODE } from "../lib/version.ts";
export const days = pipeline("days", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-02" }, {
  only: { run: () => ({ code: CODE }) },
});
// ${code}
`;
    const project = harness.create({ "idem.config.ts": CONFIG, "lib/version.ts": versionModule("v1"), "pipelines/days.ts": scheduled("first") });
    start("scheduler");
    start("worker");
    for (const day of ["2026-09-01", "2026-09-02"]) expect(await runEnded(project, `days@${day}`)).toBe("success");
    const oldVersion = codeVersionOfRun(project, "days@2026-09-01")!;
    writeFileSync(join(project, "lib/version.ts"), versionModule("v2"));
    writeFileSync(join(project, "pipelines/days.ts"), scheduled("second"));

    const preview = (...flags: string[]) => {
      const result = cli("backfill", "days", "--from", "2026-09-01", "--to", "2026-09-02", "--reprocess", "all", "--dry-run", "--json", ...flags);
      expect(result.status, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as { code: string; items: { businessDate: string; codeVersion: string | null }[] };
    };
    const latest = preview();
    expect(latest.code).toBe("latest");
    const newVersion = latest.items[0]!.codeVersion!;
    expect(newVersion).toMatch(/^[0-9a-f]{20}$/);
    expect(newVersion).not.toBe(oldVersion);
    expect(latest.items.map((i) => i.codeVersion)).toEqual([newVersion, newVersion]);
    expect(preview("--code", "same").items.map((i) => i.codeVersion)).toEqual([oldVersion, oldVersion]);
    const shown = cli("backfill", "days", "--from", "2026-09-01", "--to", "2026-09-01", "--reprocess", "all", "--dry-run", "--code", "same");
    expect(shown.stdout).toMatch(new RegExp(`2026-09-01\\s+rerun\\s+.*${oldVersion}`));

    const backfill = (date: string, ...flags: string[]) => {
      const result = cli("backfill", "days", "--from", date, "--to", date, "--reprocess", "all", "--reason", "again", "--no-follow", ...flags);
      expect(result.status, result.stderr).toBe(0);
    };
    backfill("2026-09-01", "--code", "same");
    backfill("2026-09-02");
    const ranAgain = (runId: string) => waitFor(`${runId} to run again`, () => {
      const rows = attempts(project, runId).filter((a) => a.state === "success");
      return rows.length === 2 ? JSON.parse(rows[1]!.summary!).code : undefined;
    }, 60_000);
    expect(await ranAgain("days@2026-09-01")).toBe("v1");
    expect(await ranAgain("days@2026-09-02")).toBe("v2");
    expect(codeVersionOfRun(project, "days@2026-09-01")).toBe(oldVersion);
    expect(codeVersionOfRun(project, "days@2026-09-02")).toBe(newVersion);
    const audit = queryState<{ details: string }>(project, "SELECT details FROM audit_log WHERE action = 'backfill' ORDER BY id").map((a) => JSON.parse(a.details).code);
    expect(audit).toEqual([
      { choice: "same", versions: [{ from: "2026-09-01", to: "2026-09-01", version: oldVersion }] },
      { choice: "latest", versions: [{ from: "2026-09-02", to: "2026-09-02", version: newVersion }] },
    ]);
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

const url = testPostgresUrl();

describe.skipIf(!url)("a run keeps its code (PostgreSQL, two workers with projects of their own and a shared bundle directory)", () => {
  let schema: string | null = null;
  const dirs: string[] = [];
  const daemons: Daemon[] = [];
  afterEach(async () => {
    await Promise.all(daemons.splice(0).map((d) => d.stop()));
    for (const dir of dirs.splice(0)) removeProject(dir);
    if (schema) await dropSchema(url!, schema);
    schema = null;
  });
  const startIn = (project: string, ...args: string[]) => {
    const daemon = startIdem(project, ...args);
    daemons.push(daemon);
    return daemon;
  };

  it("a worker that never loaded the old file runs the rest of a half-done run on its old code, from the shared bundles, after the first worker is killed with -9", async () => {
    schema = freshSchema();
    const shared = mkdtempSync(join(repo, ".tmp", "bundles-"));
    dirs.push(shared);
    const config = `import { defineConfig } from "idem";
export default defineConfig({ state: ${JSON.stringify(schemaUrl(url!, schema))}, bundles: ${JSON.stringify(shared)}, workerLeaseMs: 1500, schedulerLeaseMs: 1500, reloadMs: 200 });
`;
    const files = { "idem.config.ts": config, "lib/version.ts": versionModule("v1"), "pipelines/pinned.ts": PIPELINE("first deploy") };
    const first = makeProject(files);
    const second = makeProject(files);
    dirs.push(first, second);
    const q = <T>(sql: string, params: unknown[] = []) => queryPg<T>(url!, schema!, sql, params);
    const pgAttempts = (runId: string) => q<AttemptRow>("SELECT run_id, task_id, try_number, state, error_class, error_message, summary::text AS summary FROM attempts WHERE run_id = $1 ORDER BY attempt_id", [runId]);
    const pgRunEnded = (runId: string) => waitFor(`run ${runId} to end`, async () => {
      const [run] = await q<{ state: string }>("SELECT state FROM runs WHERE run_id = $1", [runId]);
      return run && (run.state === "success" || run.state === "failed") ? run.state : undefined;
    }, 60_000);

    startIn(first, "scheduler");
    const doomed = startIn(first, "worker");
    const trigger = (date: string) => {
      const result = spawnSync(process.execPath, [join(repo, "bin/idem.js"), "trigger", "pinned", "--date", date, "--reason", "test"], { cwd: first, encoding: "utf8" });
      expect(result.status, result.stderr).toBe(0);
    };
    trigger("2026-09-01");
    await waitFor("hold to be running", async () => (await pgAttempts("pinned@2026-09-01")).find((a) => a.task_id === "hold" && a.state === "running"));
    const oldVersion = (await q<{ code_version: string }>("SELECT code_version FROM runs WHERE run_id = 'pinned@2026-09-01'"))[0]!.code_version;

    // Deployed to both machines; the second starts its worker only now: it never loaded the old file.
    for (const project of [first, second]) {
      writeFileSync(join(project, "lib/version.ts"), versionModule("v2"));
      writeFileSync(join(project, "pipelines/pinned.ts"), PIPELINE("second deploy"));
    }
    await waitFor("the first worker to load the new file", () => (/pipeline files reloaded/.test(doomed.output()) ? true : undefined));
    startIn(second, "worker");
    await doomed.kill9();
    // Task code finds "go" beside the file it was built from (the first machine's project).
    writeFileSync(join(first, "go"), "");
    expect(await pgRunEnded("pinned@2026-09-01")).toBe("success");
    const old = await pgAttempts("pinned@2026-09-01");
    expect(old.filter((a) => a.task_id === "hold").map((a) => a.state)).toEqual(["lost", "success"]);
    expect(codeRan(old)).toEqual(["first:v1", "hold:v1", "after:v1", "last:v1"]);
    // The second machine copied the old bundle from the shared directory.
    expect(existsSync(join(second, ".idem", "cache", "bundles", `${oldVersion}.mjs`))).toBe(true);
    const workers = await q<{ task_id: string; worker_id: string }>("SELECT task_id, worker_id FROM attempts WHERE run_id = 'pinned@2026-09-01' AND state = 'success' ORDER BY attempt_id");
    expect(new Set(workers.slice(1).map((w) => w.worker_id)).size).toBe(1);
    expect(workers[0]!.worker_id).not.toBe(workers[1]!.worker_id);

    trigger("2026-09-02");
    expect(await pgRunEnded("pinned@2026-09-02")).toBe("success");
    expect(codeRan(await pgAttempts("pinned@2026-09-02"))).toEqual(["first:v2", "hold:v2", "after:v2", "last:v2"]);
    const indexed = await q<{ code_version: string; location: string }>("SELECT code_version, location FROM code_versions ORDER BY created_at");
    expect(indexed).toHaveLength(2);
    expect(indexed.every((v) => v.location === shared)).toBe(true);
    expect(indexed[0]!.code_version).toBe(oldVersion);
  }, 120_000);
});
