import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ArgumentError } from "../../src/core/model/errors.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { flagOf } from "../../src/cli/flags.ts";
import { call, testApp } from "../support/http.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
let operator: string;

beforeEach(async () => {
  const sales = pipeline("sales", { schedule: daily({ at: "02:00" }), start: "2026-09-01" }, { load: { run: () => ({ rows: 1 }) }, report: { after: ["load"], run: () => {} } });
  h = await ScheduleHarness.open([sales], "2026-09-06T03:00:00Z");
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
    const badFrom = await call(app, "/api/v1/pipelines/sales/expected?from=someday", { token: operator });
    expect([badFrom.status, badFrom.body.field]).toEqual([422, "from"]);
  });

  it("flagOf turns an argument into its flag", () => {
    expect(["end", "maxActiveRuns", "openFrozen", "failedOnly"].map(flagOf)).toEqual(["--end", "--max-active-runs", "--open-frozen", "--failed-only"]);
  });
});
