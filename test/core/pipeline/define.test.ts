import { describe, expect, it } from "vitest";
import { DefinitionError, DefinitionErrors } from "../../../src/core/model/errors.ts";
import { pipeline } from "../../../src/core/pipeline/define.ts";
import { cron, daily } from "../../../src/core/time/index.ts";

const noop = () => {};

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof DefinitionErrors) return error.problems.map((p) => p.message);
    if (error instanceof DefinitionError) return [error.message];
    throw error;
  }
  throw new Error("expected a definition error");
}

describe("defining a pipeline", () => {
  it("orders tasks so every task comes after its upstream", () => {
    const p = pipeline("etl", { schedule: daily({ at: "06:00", timezone: "UTC" }) }, {
      load: { after: ["transform"], run: noop },
      transform: { after: ["extract"], run: noop },
      extract: { run: noop },
    });
    expect([...p.tasks.keys()]).toEqual(["extract", "transform", "load"]);
    expect(p.tasks.get("extract")!.downstream).toEqual(["transform"]);
  });

  it("fills policies from the pipeline defaults, then the task's own", () => {
    const p = pipeline("etl", { defaults: { retries: 2, retryDelay: "30s", timeout: "1h" } }, {
      a: { run: noop },
      b: { after: ["a"], run: noop, retries: 0, backoff: "exponential", maxRetryDelay: "10m", jitter: true, pool: "warehouse", slots: 2, triggerRule: "all_done" },
    });
    expect(p.tasks.get("a")!.policy).toMatchObject({ retries: 2, retryDelayMs: 30_000, timeoutMs: 3_600_000, triggerRule: "all_success" });
    expect(p.tasks.get("b")!.policy).toMatchObject({
      retries: 0, backoff: "exponential", maxRetryDelayMs: 600_000, jitter: 0.1, pool: "warehouse", slots: 2, triggerRule: "all_done",
    });
  });

  it("accepts tasks as a list too", () => {
    const p = pipeline("listed", {}, [
      { id: "a", run: noop },
      { id: "b", after: ["a"], command: ["echo", "hi"] },
    ]);
    expect(p.tasks.get("b")).toMatchObject({ kind: "command", command: ["echo", "hi"], dataErrorExitCodes: [65] });
  });

  it("reads a cron string in the given time zone", () => {
    const p = pipeline("hourly_ish", { schedule: "0 */6 * * *", timezone: "America/New_York" }, { a: { run: noop } });
    expect(p.schedule.kind).toBe("cron");
    expect(p.schedule.timezone).toBe("America/New_York");
  });

  it("has a version that depends on the graph, not on the order it was written in", () => {
    const one = pipeline("v", {}, { a: { run: noop }, b: { after: ["a"], run: noop, retries: 1 } });
    const same = pipeline("v", {}, { b: { retries: 1, after: ["a"], run: () => ({}) }, a: { run: noop } });
    const moreRetries = pipeline("v", {}, { a: { run: noop }, b: { after: ["a"], run: noop, retries: 2 } });
    const otherSchedule = pipeline("v", { schedule: daily({ at: "01:00" }) }, { a: { run: noop }, b: { after: ["a"], run: noop, retries: 1 } });
    expect(one.version).toMatch(/^[0-9a-f]{16}$/);
    expect(same.version).toBe(one.version);
    expect(moreRetries.version).not.toBe(one.version);
    expect(otherSchedule.version).not.toBe(one.version);
  });
});

describe("a pipeline that cannot be accepted", () => {
  it("names the path of a cycle", () => {
    expect(problemsOf(() => pipeline("loop", {}, {
      a: { after: ["c"], run: noop },
      b: { after: ["a"], run: noop },
      c: { after: ["b"], run: noop },
    }))).toEqual(["pipeline loop, task a: cycle: a -> b -> c -> a"]);
  });

  it("names an unknown dependency", () => {
    expect(problemsOf(() => pipeline("etl", {}, { load: { after: ["extrct" as never], run: noop } }))).toEqual([
      'pipeline etl, task load: depends on unknown task "extrct"',
    ]);
  });

  it("names a duplicate task id", () => {
    expect(problemsOf(() => pipeline("etl", {}, [{ id: "a", run: noop }, { id: "a", run: noop }]))).toEqual([
      'pipeline etl, task a: duplicate task id "a"',
    ]);
  });

  it("names invalid ids", () => {
    expect(problemsOf(() => pipeline("bad id", {}, { ok: { run: noop } }))).toEqual([
      'pipeline "bad id": invalid pipeline id: use letters, digits, _ and -, starting with a letter or _',
    ]);
    expect(problemsOf(() => pipeline("etl", {}, [{ id: "no/slash", run: noop }]))).toEqual([
      'pipeline etl: invalid task id "no/slash": use letters, digits, _ and -, starting with a letter or _',
    ]);
  });

  it("names a bad duration, date, time zone and cron expression", () => {
    expect(problemsOf(() => pipeline("etl", { start: "2026-02-30" }, { a: { run: noop, timeout: "5 minutes" } }))).toEqual([
      expect.stringMatching(/^pipeline etl: start: bad date "2026-02-30"/),
      expect.stringMatching(/^pipeline etl, task a: bad timeout "5 minutes"/),
    ]);
    expect(problemsOf(() => pipeline("etl", { schedule: "0 2 * * *", timezone: "Europe/Lodnon" }, { a: { run: noop } }))).toEqual([
      expect.stringMatching(/^pipeline etl: unknown time zone "Europe\/Lodnon"/),
    ]);
    expect(problemsOf(() => pipeline("etl", { schedule: "61 * * * *" }, { a: { run: noop } }))).toEqual([
      expect.stringMatching(/^pipeline etl: bad cron expression "61 \* \* \* \*"/),
    ]);
    expect(() => cron("not cron")).toThrow(DefinitionError);
  });

  it("reports every problem at once, one line each", () => {
    const problems = problemsOf(() => pipeline("etl", { catchup: "some" as never, maxActiveRuns: 0 }, {
      a: { run: noop, retries: -1 },
      b: { after: ["zz" as never], run: noop, triggerRule: "sometimes" as never },
      c: { run: noop, command: ["echo"] } as never,
    }));
    expect(problems).toEqual([
      'pipeline etl: catchup must be "all" or "latest", not "some"',
      "pipeline etl: maxActiveRuns must be a whole number >= 1, not 0",
      "pipeline etl, task a: retries must be a whole number >= 0, not -1",
      'pipeline etl, task b: unknown trigger rule "sometimes" (one of all_success, all_done, one_success, none_failed, none_failed_min_one_success, always)',
      "pipeline etl, task c: needs exactly one of `run` (a function), `command` (an argv array), `sensor` (a condition), `sql` (a statement or { file }) or `external` (a remote job: submit, poll, cancel)",
      'pipeline etl, task b: depends on unknown task "zz"',
    ]);
  });

  it("names a promise without its one publishing task, a bad deadline, and a bad frozen period", () => {
    expect(problemsOf(() => pipeline("shop", { promises: [{ dataset: "orders_daily", deadline: "tomorrow 6am" }] }, { a: { run: noop } }))).toEqual([
      'pipeline shop: promise orders_daily: deadline "tomorrow 6am": expected "D+<days> HH:MM", e.g. "D+1 06:00"',
    ]);
    expect(problemsOf(() => pipeline("shop", { promises: [{ dataset: "orders_daily", deadline: "D+1 06:00", slo: "D+1 07:00" }] }, { a: { run: noop, publishes: "orders_daily" } }))).toEqual([
      "pipeline shop: promise orders_daily: the slo D+1 07:00 comes after the deadline D+1 06:00",
      'pipeline shop, task a: publishes "orders_daily" but the pipeline has no promise for it',
    ]);
    expect(problemsOf(() => pipeline("shop", { promises: [{ dataset: "orders_daily", deadline: "D+1 06:00" }] }, { a: { run: noop } }))).toEqual([
      'pipeline shop: promise orders_daily: needs exactly one task with publishes: "orders_daily" (found none)',
    ]);
    expect(problemsOf(() => pipeline("shop", { frozen: [{ from: "2026-09-30", to: "2026-09-01", owner: "finance", reason: "closed" }] }, { a: { run: noop } }))).toEqual([
      "pipeline shop: frozen[0]: to 2026-09-01 is before from 2026-09-30",
    ]);
  });

  it("names a frozen period without an owner or a reason, with a bad date or an unknown key, by its field", () => {
    const frozen = (periods: unknown[]) => problemsOf(() => pipeline("shop", { frozen: periods as never }, { a: { run: noop } }));
    expect(frozen([{ from: "2026-09-01", to: "2026-09-30", reason: "September closed" }])).toEqual([
      'pipeline shop: frozen[0].owner: a frozen period needs an owner (who answers for it, e.g. "finance")',
    ]);
    expect(frozen([{ from: "2026-09-01", to: "2026-09-30", owner: "finance", reason: "ok" }, { from: "2026-10-01", to: "2026-10-31", owner: " ", reason: "x" }])).toEqual([
      'pipeline shop: frozen[1].owner: a frozen period needs an owner (who answers for it, e.g. "finance")',
    ]);
    expect(frozen([{ from: "2026-09-01", to: "2026-09-30", owner: "finance" }])).toEqual(["pipeline shop: frozen[0].reason: a frozen period needs a reason"]);
    expect(frozen([{ from: "2026-09-31", to: "2026-10-30", owner: "finance", reason: "x" }])[0]).toMatch(/^pipeline shop: frozen\[0\]\.from: /);
    expect(frozen([{ from: "2026-09-01", to: "2026-09-30", onwer: "finance", reason: "x" }])).toEqual([
      'pipeline shop: frozen[0]: unknown key "onwer" (did you mean "owner"?)',
    ]);
    const ok = pipeline("shop", { frozen: [{ from: "2026-09-01", to: "2026-09-30", owner: " finance ", reason: "September closed" }] }, { a: { run: noop } });
    expect(ok.frozen).toEqual([{ from: "2026-09-01", to: "2026-09-30", owner: "finance", reason: "September closed" }]);
  });

  it("names a sensor without a condition function or with a zero poke interval", () => {
    expect(problemsOf(() => pipeline("s", {}, { wait: { sensor: true as never } }))).toEqual([
      "pipeline s, task wait: `sensor` must be a function returning true when the condition is met",
    ]);
    expect(problemsOf(() => pipeline("s", {}, { wait: { sensor: () => true, pokeInterval: 0 } }))).toEqual([
      "pipeline s, task wait: pokeInterval must be more than 0",
    ]);
  });

  it("names an external job without its functions, a zero poll interval, and a sensor's key on it", () => {
    expect(problemsOf(() => pipeline("x", {}, { job: { external: { submit: () => 1 } as never } }))).toEqual([
      "pipeline x, task job: `external` lacks `poll`, `cancel`: a job needs submit(ctx, key), poll(handle) and cancel(handle) functions",
    ]);
    const job = { submit: () => 1, poll: () => ({ state: "running" as const }), cancel: () => {} };
    expect(problemsOf(() => pipeline("x", {}, { job: { external: job, pollInterval: 0, pokeInterval: "1m" } as never }))).toEqual([
      "pipeline x, task job: `pokeInterval` is an option of sensor tasks, and this is an external task (`external`)",
      "pipeline x, task job: pollInterval must be more than 0",
    ]);
    const ok = pipeline("x", {}, { job: { external: { ...job, adapter: "slurm" }, pollInterval: "1m", maxPollInterval: "5m" } });
    expect(ok.definition.tasks).toEqual([expect.objectContaining({ kind: "external", adapter: "slurm", externalPolicy: { pollIntervalMs: 60_000, pollBackoff: true, maxPollIntervalMs: 300_000 } })]);
  });

  it("refuses an end before its start and an empty pipeline", () => {
    expect(problemsOf(() => pipeline("etl", { start: "2026-09-10", end: "2026-09-01" }, { a: { run: noop } }))).toEqual([
      "pipeline etl: end 2026-09-01 is not after start 2026-09-10",
    ]);
    expect(problemsOf(() => pipeline("empty", {}, {}))).toEqual(["pipeline empty: has no tasks"]);
  });
});
