import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repo = resolve(import.meta.dirname, "../..");
const bin = join(repo, "bin/idem.js");
let project: string;

/** Runs the real `idem` binary in the test project, as a user would. */
function idem(...args: string[]) {
  const result = spawnSync(process.execPath, [bin, ...args], {
    cwd: project,
    encoding: "utf8",
    env: { ...process.env, IDEM_USER: "tester", NO_COLOR: "1" },
    timeout: 60_000,
  });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

function writeProject(dir: string, files: Record<string, string>) {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

const CONFIG = `import { defineConfig } from "idem";\nexport default defineConfig({ pipelines: "pipelines" });\n`;
const GOOD = `
import { pipeline, daily, DataError } from "idem";
export const sales = pipeline("sales", { schedule: daily({ at: "02:00", timezone: "Europe/London" }), start: "2026-09-01", params: { broken: false } }, {
  extract: { run: (ctx) => { ctx.log.info("extracting " + ctx.businessDate); return { rows: 3 }; } },
  check: { after: ["extract"], run: (ctx) => { if (ctx.params.broken) throw new DataError(ctx.businessDate + ": 6 rows for 3 orders"); } },
});
`;

beforeAll(() => {
  // Inside the repo, so pipeline files resolve "idem" to this package, as an installed one would.
  mkdirSync(join(repo, ".tmp"), { recursive: true });
  project = mkdtempSync(join(repo, ".tmp", "cli-"));
  writeProject(project, { "idem.config.ts": CONFIG, "pipelines/sales.ts": GOOD });
});
afterAll(() => rmSync(project, { recursive: true, force: true }));

describe("idem CLI", () => {
  it("validates the project and lists its pipelines", () => {
    const { code, out } = idem("validate");
    expect(code).toBe(0);
    expect(out).toMatch(/ok: 1 pipeline\(s\)/);
    expect(out).toMatch(/sales\s+2 task\(s\)\s+daily at 02:00 Europe\/London\s+version [0-9a-f]{16}/);
  });

  it("runs a pipeline for a business date and exits 0", () => {
    const { code, out } = idem("run", "sales", "--date", "2026-09-01");
    expect(code).toBe(0);
    expect(out).toMatch(/extract\s+try 1\s+success/);
    expect(out).toMatch(/run sales@2026-09-01 success in/);
  });

  it("refuses a param the pipeline does not declare, in one line, exit 2, with no run made", () => {
    for (const command of [["run", "sales", "--date", "2026-09-03"]]) {
      const { code, out, err } = idem(...command, "-p", "brokn=true");
      expect([code, out, err]).toEqual([2, "", 'idem: pipeline sales: param "brokn" is not declared by the pipeline (declared: broken) (did you mean "broken"?)\n']);
    }
    expect(idem("runs", "sales", "--json").out).not.toContain("2026-09-03");
  });

  it("exits 1 when the run fails, naming the error", () => {
    const { code, out } = idem("run", "sales", "--date", "2026-09-02", "--param", "broken=true");
    expect(code).toBe(1);
    expect(out).toMatch(/check\s+try 1\s+failed\s+2026-09-02: 6 rows for 3 orders/);
    expect(out).toMatch(/run sales@2026-09-02 failed/);
  });

  it("lists runs and task instances, as tables or JSON", () => {
    const runs = idem("runs", "sales", "--json");
    expect(runs.code).toBe(0);
    expect(JSON.parse(runs.out).map((r: { runId: string; state: string; triggeredBy: string }) => [r.runId, r.state, r.triggeredBy])).toEqual([
      ["sales@2026-09-02", "failed", "tester"],
      ["sales@2026-09-01", "success", "tester"],
    ]);
    const table = idem("runs", "sales");
    expect(table.out.split("\n")[0]).toMatch(/^RUN\s+DATE\s+STATE\s+TRIGGER\s+BY\s+STARTED\s+TOOK\s+RESTATED\s+CODE$/);
    // Each row ends with the code version its run is pinned to.
    const pinned = JSON.parse(runs.out)[0].codeVersion as string;
    expect(pinned).toMatch(/^[0-9a-f]{8,}$/);
    expect(table.out.split("\n")[1]).toMatch(new RegExp(`^sales@2026-09-02\\s.*\\s${pinned}$`));
    const tasks = idem("tasks", "sales@2026-09-02", "--json");
    expect(JSON.parse(tasks.out).map((t: { taskId: string; state: string }) => [t.taskId, t.state])).toEqual([
      ["extract", "success"],
      ["check", "failed"],
    ]);
    expect(idem("tasks", "sales@2026-09-02").out).toMatch(/check\s+failed\s+1\/1.*DataError: 2026-09-02: 6 rows for 3 orders/);
  });

  it("prints an attempt's log", () => {
    const { code, out } = idem("logs", "sales@2026-09-01", "extract");
    expect(code).toBe(0);
    expect(out).toMatch(/INFO extracting 2026-09-01/);
    expect(idem("logs", "sales@2026-09-01", "extract", "--try", "7").err).toMatch(/has no try 7 \(tries: 1\)/);
  });

  it("previews the next runs", () => {
    const { code, out } = idem("next", "sales", "-n", "3", "--json");
    expect(code).toBe(0);
    const due = JSON.parse(out);
    expect(due).toHaveLength(3);
    expect(due[1].businessDate > due[0].businessDate).toBe(true);
  });

  it("answers bad input with one line and exit 2", () => {
    const cases: [string[], RegExp][] = [
      [["run", "nope", "--date", "2026-09-01"], /^idem: unknown pipeline "nope" \(known: sales\)\n$/],
      [["run", "sales", "--date", "2026-13-01"], /^idem: pipeline sales: bad date "2026-13-01"/],
      [["run", "sales"], /^idem: give the interval: --date YYYY-MM-DD, or --start and --end\n$/],
      [["run", "sales", "--date", "2026-08-01"], /^idem: pipeline sales: 2026-08-01 is before the pipeline's start/],
      [["tasks", "sales@1999-01-01"], /^idem: unknown run "sales@1999-01-01"/],
      // The engine names its arguments (to, tasks, end); the CLI prints the flags that gave them.
      [["backfill", "sales", "--from", "2026-09-04", "--to", "2026-09-01", "--dry-run"], /^idem: pipeline sales: --to 2026-09-01 is before --from 2026-09-04\n$/],
      [["backfill", "sales", "--from", "2026-09-01", "--to", "2026-09-02", "--tasks", "(", "--dry-run"], /^idem: --tasks "\(": not a regular expression: /],
      [["run", "sales", "--start", "2026-09-02", "--end", "2026-09-01"], /^idem: pipeline sales: --end 2026-09-01 is not after --start 2026-09-02\n$/],
    ];
    for (const [args, message] of cases) {
      const { code, err } = idem(...args);
      expect({ args, code }).toEqual({ args, code: 2 });
      expect(err).toMatch(message);
      expect(err).not.toMatch(/\n\s+at /);
    }
    const unknownOption = idem("run", "sales", "--dat", "2026-09-01");
    expect(unknownOption.code).toBe(2);
    expect(unknownOption.err).toMatch(/unknown option '--dat'/);
  });

  it("refuses a bad number for a numeric flag before the command runs: one line naming the flag and the value, exit 2", () => {
    const cases: [string[], string][] = [
      [["runs", "sales", "--limit", "zero"], "option '--limit <n>' argument 'zero' is invalid. Expected a whole number >= 1."],
      [["runs", "sales", "--limit", "0"], "option '--limit <n>' argument '0' is invalid. Expected a whole number >= 1."],
      [["next", "sales", "-n", "1e3"], "option '-n, --count <n>' argument '1e3' is invalid. Expected a whole number >= 1."],
      [["logs", "sales@2026-09-01", "extract", "--tail", "-1"], "option '--tail <n>' argument '-1' is invalid. Expected a whole number >= 0."],
      [["run", "sales", "--date", "2026-09-01", "--concurrency", "2.5"], "option '--concurrency <n>' argument '2.5' is invalid. Expected a whole number >= 1."],
      [["backfill", "sales", "--from", "2026-09-01", "--to", "2026-09-02", "--max-active-runs", "0"], "option '--max-active-runs <n>' argument '0' is invalid. Expected a whole number >= 1."],
      [["serve", "--port", "70000"], "option '--port <port>' argument '70000' is invalid. Expected a whole number from 0 to 65535."],
      [["worker", "--health-port", " 80"], "option '--health-port <port>' argument ' 80' is invalid. Expected a whole number from 0 to 65535."],
      [["worker", "--grace", ""], "option '--grace <seconds>' argument '' is invalid. Expected a whole number >= 0."],
      [["worker", "--prefetch", "lots"], "option '--prefetch <n|auto>' argument 'lots' is invalid. Expected a whole number >= 0 or \"auto\"."],
    ];
    for (const [args, message] of cases) {
      const { code, out, err } = idem(...args);
      expect({ args, code, out }).toEqual({ args, code: 2, out: "" });
      expect(err.split("\n")[0]).toBe(`error: ${message}`);
    }
  });

  it("pauses and unpauses with a note, audited under the acting user", () => {
    expect(idem("pause", "sales", "--note", "vendor outage").out).toBe("sales paused: vendor outage\n");
    const expected = idem("expected", "sales", "--from", "2026-09-03", "--to", "2026-09-05", "--json");
    expect(JSON.parse(expected.out).map((e: { status: string; note: string }) => [e.status, e.note])).toEqual([
      ["missing", "pipeline is paused (vendor outage)"],
      ["missing", "pipeline is paused (vendor outage)"],
    ]);
    expect(idem("--user", "ana", "unpause", "sales").out).toBe("sales unpaused\n");
    const table = idem("expected", "sales", "--from", "2026-09-01", "--to", "2026-09-04");
    expect(table.out).toMatch(/2026-09-01\s+2026-09-02 02:00 Europe\/London\s+success\s+sales@2026-09-01/);
    expect(table.out).toMatch(/2026-09-03 .* missing .* no scheduler has ever held the lead: is a scheduler running\?/);
  });

  it("sets, lists and deletes pools", () => {
    expect(idem("pools", "set", "warehouse", "--slots", "2", "--description", "the DuckDB file").code).toBe(0);
    expect(idem("pools").out).toMatch(/^POOL\s+SLOTS\s+USED\s+HELD BY\nwarehouse\s+2\s+0\s*$/m);
    expect(idem("pools", "set", "warehouse", "--slots", "many").err).toMatch(/^error: option '--slots <n>' argument 'many' is invalid\. Expected a whole number >= 0\.\n/);
    expect(idem("pools", "delete", "warehouse").out).toBe("pool warehouse deleted\n");
    expect(idem("pools", "delete", "warehouse").err).toBe('idem: no pool named "warehouse"\n');
  });

  it("explains why a run is not running", () => {
    const { code, out } = idem("why", "sales@2026-09-02");
    expect(code).toBe(0);
    expect(out).toBe("run sales@2026-09-02 is finished: failed at " + out.split(" at ")[1]!.split("\n")[0] + "\ncheck: failed after try 1 of 1: DataError: 2026-09-02: 6 rows for 3 orders\n");
    const future = idem("why", "sales@2099-01-01");
    expect(future.out).toMatch(/run sales@2099-01-01 does not exist yet\nnot due until 2099-01-02 02:00 Europe\/London\n/);
  });

  it("plans a backfill without changing anything, then triggers, clears and audits", () => {
    const plan = idem("backfill", "sales", "--from", "2026-09-01", "--to", "2026-09-04", "--dry-run", "--json");
    expect(plan.code).toBe(0);
    expect(JSON.parse(plan.out).items.map((i: { businessDate: string; action: string }) => `${i.businessDate} ${i.action}`)).toEqual([
      "2026-09-01 leave", "2026-09-02 leave", "2026-09-03 create", "2026-09-04 create",
    ]);
    expect(idem("backfills").out).toBe("no backfills\n");
    expect(idem("backfill", "sales", "--from", "2026-09-03", "--to", "2026-09-04").err).toBe('idem: a backfill needs --reason "..."\n');
    expect(idem("trigger", "sales", "--date", "2026-09-05", "--reason", "late file").out).toBe("run sales@2026-09-05 created (queued)\n");
    expect(idem("trigger", "sales", "--date", "2026-09-05").err).toMatch(/run sales@2026-09-05 already exists \(queued\); use idem clear/);
    const future = idem("trigger", "sales", "--date", "2099-01-01", "--reason", "too early");
    expect(future.code).toBe(2);
    expect(future.err).toMatch(/^idem: pipeline sales: 2099-01-01 has not ended: its interval ends at 2099-01-02 00:00 Europe\/London; the newest date that can run now is \d{4}-\d\d-\d\d\n$/);
    expect(idem("clear", "sales@2026-09-02").err).toBe('idem: give --reason "...": manual actions are audited\n');
    expect(idem("clear", "sales@2026-09-02", "--failed-only", "--reason", "fixed the check").out).toBe("cleared sales@2026-09-02: check\n");
    const audit = JSON.parse(idem("audit", "--pipeline", "sales", "--json").out);
    expect(audit.slice(0, 2).map((a: { action: string; actor: string; reason: string }) => `${a.actor} ${a.action} ${a.reason}`)).toEqual([
      "tester clear fixed the check", "tester trigger late file",
    ]);
  });

  it("says loudly that nothing checks freshness when no scheduler runs", () => {
    const health = idem("health");
    expect(health.code).toBe(1);
    expect(health.out).toBe(
      "CHECKER DOWN: no watchdog has ever run: nothing checks the promises (every scheduler, worker and web server runs it); " +
        "no scheduler has ever held the lead: is a scheduler running?\n",
    );
    expect(JSON.parse(idem("freshness", "--json").out)).toMatchObject({ checker: { status: "none" }, datasets: [] });
  });

  it("asks which warehouse before reading a table's history", () => {
    expect(idem("history", "orders_daily").err).toBe("idem: which warehouse holds orders_daily? give --warehouse duckdb:<path>, or set `warehouse` in idem.config.ts (orders_daily is no file dataset: there is no .orders_daily.idem/history.jsonl)\n");
    expect(idem("history", "orders_daily", "--warehouse", "duckdb:" + join(project, "empty.duckdb")).out).toBe("no writes recorded for orders_daily\n");
  });

  it("shows the stack trace only with --verbose", () => {
    const { err } = idem("--verbose", "run", "nope", "--date", "2026-09-01");
    expect(err).toMatch(/\n\s+at /);
  });
});

describe("idem CLI on a broken project", () => {
  let broken: string;
  beforeAll(() => {
    broken = mkdtempSync(join(repo, ".tmp", "cli-broken-"));
    writeProject(broken, {
      "idem.config.ts": CONFIG,
      "pipelines/cyclic.ts": `import { pipeline } from "idem";
export const cyclic = pipeline("cyclic", {}, [
  { id: "a", after: ["b"], run: () => {} },
  { id: "b", after: ["a"], run: () => {} },
  { id: "c", after: ["ghost"], run: () => {} },
]);
`,
      "pipelines/typo.ts": `import { pipeline } from "idem";\nexport const p = pipeline("typo", { schedule: "0 2 * * *", timezone: "Mars/Olympus" }, { a: { run: () => {} } });\n`,
      "pipelines/syntax.ts": `export const = ;\n`,
    });
  });
  afterAll(() => rmSync(broken, { recursive: true, force: true }));

  it("reports every problem, one line each naming file, pipeline and task, and exits 2", () => {
    const result = spawnSync(process.execPath, [bin, "validate"], { cwd: broken, encoding: "utf8" });
    expect(result.status).toBe(2);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toEqual([
      // each on the line of the task's `after`
      "idem: pipelines/cyclic.ts:3: pipeline cyclic, task a: cycle: a -> b -> a",
      'idem: pipelines/cyclic.ts:5: pipeline cyclic, task c: depends on unknown task "ghost"',
      'idem: pipelines/syntax.ts:1: does not compile: Expected identifier but found "="',
      expect.stringMatching(/^idem: pipelines\/typo\.ts(:\d+)?: pipeline typo: unknown time zone "Mars\/Olympus"/),
    ]);
  });
});
