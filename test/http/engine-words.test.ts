import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ArgumentError, IdemError } from "../../src/core/model/errors.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily, hourly } from "../../src/core/time/index.ts";
import { flagOf } from "../../src/cli/flags.ts";
import { remedyAsCommand } from "../../src/cli/remedies.ts";
import { call, testApp } from "../support/http.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
let operator: string;

beforeEach(async () => {
  const sales = pipeline("sales", { schedule: daily({ at: "02:00" }), start: "2026-09-01" }, { load: { run: () => ({ rows: 1 }) }, report: { after: ["load"], run: () => {} } });
  const ticks = pipeline("ticks", { schedule: hourly({}), start: "2026-09-01" }, { t: { run: () => {} } });
  h = await ScheduleHarness.open([sales, ticks], "2026-09-06T03:00:00Z");
  operator = (await h.engine.createToken({ name: "alice", role: "operator", actor: "root" })).secret;
});
afterEach(async () => h?.close());

/** What a call refused with: the argument it blames, its message in the engine's words, and in the CLI's. */
async function refusal(call: () => Promise<unknown>): Promise<[string, string, string]> {
  const error = await call().then(() => null, (e: unknown) => e);
  if (!(error instanceof ArgumentError)) throw new Error(`expected an ArgumentError, got ${String(error)}`);
  return [error.argument, error.message, error.describe(flagOf)];
}

describe("the engine's errors name arguments in its own words; surfaces name them in theirs", () => {
  it("the engine says end, maxActiveRuns, tasks, slots, role, reason, openFrozen; the CLI prints the flags", async () => {
    const { engine } = h;
    expect(await refusal(() => Promise.resolve().then(() => engine.intervalBetween("sales", "2026-09-02", "2026-09-01")))).toEqual([
      "end", "pipeline sales: end 2026-09-01 is not after start 2026-09-02", "pipeline sales: --end 2026-09-01 is not after --start 2026-09-02",
    ]);
    expect(await refusal(() => Promise.resolve().then(() => engine.intervalForDate("ticks", "2026-09-01")))).toEqual([
      "date",
      "pipeline ticks: hourly schedule: 24 intervals start on 2026-09-01; give start and end instead of date",
      "pipeline ticks: hourly schedule: 24 intervals start on 2026-09-01; give --start and --end instead of --date",
    ]);
    expect(await refusal(() => engine.planBackfill("sales", { from: "2026-09-04", to: "2026-09-01" }))).toEqual([
      "to", "pipeline sales: to 2026-09-01 is before from 2026-09-04", "pipeline sales: --to 2026-09-01 is before --from 2026-09-04",
    ]);
    expect(await refusal(() => engine.planBackfill("sales", { from: "2026-09-01", to: "2026-09-02", maxActiveRuns: 0 }))).toEqual([
      "maxActiveRuns", "maxActiveRuns 0: expected a whole number >= 1", "--max-active-runs 0: expected a whole number >= 1",
    ]);
    expect((await refusal(() => engine.planBackfill("sales", { from: "2026-09-01", to: "2026-09-02", tasks: "^nope$" })))[2]).toBe(
      '--tasks "^nope$" matches no task of sales (tasks: load, report)',
    );
    expect((await refusal(() => engine.setPool("warehouse", -1)))[1]).toBe("slots -1: expected a whole number >= 0");
    expect((await refusal(() => engine.createToken({ name: "ci", role: "admin" as "viewer" })))[2]).toBe("--role admin: expected viewer or operator");
    expect((await refusal(() => engine.backfill("sales", { from: "2026-09-01", to: "2026-09-02", reason: " " })))[1]).toBe("a backfill needs reason");
    expect((await refusal(() => engine.expected("sales", { from: "someday" })))[0]).toBe("from");
  });

  it("the HTTP API answers 422 naming the body or query field the engine blamed", async () => {
    const app = testApp(h.engine);
    const backwards = await call(app, "/api/v1/backfills/preview", { token: operator, body: { pipelineId: "sales", from: "2026-09-04", to: "2026-09-01" } });
    expect([backwards.status, backwards.body.field, backwards.body.detail]).toEqual([422, "to", "pipeline sales: to 2026-09-01 is before from 2026-09-04"]);
    const badTasks = await call(app, "/api/v1/backfills/preview", { token: operator, body: { pipelineId: "sales", from: "2026-09-01", to: "2026-09-02", tasks: "(" } });
    expect([badTasks.status, badTasks.body.field]).toEqual([422, "tasks"]);
    expect(badTasks.body.detail).toMatch(/^tasks "\(": not a regular expression: /);
    const undeclared = await call(app, "/api/v1/pipelines/sales/runs", { token: operator, body: { date: "2026-09-04", reason: "eu only", params: { region: "eu" } } });
    expect([undeclared.status, undeclared.body.field, undeclared.body.detail]).toEqual([422, "params", 'pipeline sales: param "region" is not declared by the pipeline (it declares none)']);
    const badFrom = await call(app, "/api/v1/pipelines/sales/expected?from=someday", { token: operator });
    expect([badFrom.status, badFrom.body.field]).toEqual([422, "from"]);
  });

  it("flagOf turns an argument into its flag", () => {
    expect(["end", "maxActiveRuns", "openFrozen", "failedOnly"].map(flagOf)).toEqual(["--end", "--max-active-runs", "--open-frozen", "--failed-only"]);
  });

  it("a refusal says what to do in the engine's words; the CLI says it as the command, the HTTP API as the engine does", async () => {
    const { engine } = h;
    const remedied = async (call: () => Promise<unknown>): Promise<[string, string]> => {
      const error = await call().then(() => null, (e: unknown) => e);
      if (!(error instanceof IdemError) || error.remedy === null) throw new Error(`expected an error with a remedy, got ${String(error)}`);
      return [error.message, error.withRemedy(remedyAsCommand)];
    };
    await engine.trigger("sales", "2026-09-05", { actor: "ana" });
    expect(await remedied(() => engine.trigger("sales", "2026-09-05", { actor: "ana" }))).toEqual([
      "pipeline sales: run sales@2026-09-05 already exists (queued); clear run sales@2026-09-05 to run it again",
      'pipeline sales: run sales@2026-09-05 already exists (queued); use idem clear sales@2026-09-05 --reason "..." to run it again',
    ]);
    expect(await remedied(() => engine.revokeToken("nobody", { actor: "ana" }))).toEqual([
      'no live token named "nobody"; list the live tokens for their names',
      'no live token named "nobody"; see idem tokens list',
    ]);
    const again = await call(testApp(engine), "/api/v1/pipelines/sales/runs", { token: operator, body: { date: "2026-09-05", reason: "again" } });
    expect([again.status, again.body.detail]).toEqual([409, "pipeline sales: run sales@2026-09-05 already exists (queued); clear run sales@2026-09-05 to run it again"]);
  });
});
