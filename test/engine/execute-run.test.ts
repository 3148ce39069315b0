import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/core/model/clock.ts";
import { DataError } from "../../src/core/model/errors.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { FakeClock } from "../../src/testing.ts";
import { openTestEngine, type TestEngine } from "../support/engine.ts";

let t: TestEngine;
afterEach(async () => t?.close());

const london = daily({ at: "02:00", timezone: "Europe/London" });

describe("running a pipeline for a business date", () => {
  it("runs tasks in dependency order and records every attempt", async () => {
    const order: string[] = [];
    const p = pipeline("orders", { schedule: london }, {
      extract: { run: () => void order.push("extract") },
      transform: { after: ["extract"], run: () => void order.push("transform") },
      load: { after: ["transform"], run: () => { order.push("load"); return { rows: 3 }; } },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    const result = await t.engine.runForDate("orders", "2026-09-01");
    expect(order).toEqual(["extract", "transform", "load"]);
    expect(result.run).toMatchObject({ runId: "orders@2026-09-01", state: "success", trigger: "manual" });
    expect(result.tasks.map((x) => [x.taskId, x.state, x.tryNumber])).toEqual([
      ["extract", "success", 1],
      ["transform", "success", 1],
      ["load", "success", 1],
    ]);
    const [load] = await t.store.listAttempts("orders@2026-09-01", "load");
    expect(load!.summary).toEqual({ rows: 3 });
  });

  it("gives each task the interval and business date, never today", async () => {
    let seen: Record<string, unknown> = {};
    const p = pipeline("dates", { schedule: london, params: { region: "eu" } }, {
      look: {
        run: (ctx) => {
          seen = {
            runId: ctx.runId,
            businessDate: ctx.businessDate,
            start: ctx.interval.start.toString(),
            end: ctx.interval.end.toString(),
            tryNumber: ctx.tryNumber,
            params: ctx.params,
          };
        },
      },
    });
    t = await openTestEngine([p], new FakeClock("2026-12-25T12:00:00Z"));
    await t.engine.runForDate("dates", "2026-10-25", { params: { region: "uk" } });
    expect(seen).toEqual({
      runId: "dates@2026-10-25",
      businessDate: "2026-10-25",
      // the day the clocks go back in London is 25 hours long
      start: "2026-10-25T00:00:00+01:00[Europe/London]",
      end: "2026-10-26T00:00:00+00:00[Europe/London]",
      tryNumber: 1,
      params: { region: "uk" },
    });
  });

  it("refuses a param the pipeline does not declare, on a run here and on a trigger, and creates no run", async () => {
    const p = pipeline("dates", { schedule: london, params: { region: "eu", limit: 10 } }, { look: { run: () => {} } });
    t = await openTestEngine([p], new FakeClock("2026-12-25T12:00:00Z"));
    const refusal = 'pipeline dates: param "regoin" is not declared by the pipeline (declared: region, limit) (did you mean "region"?)';
    await expect(t.engine.runForDate("dates", "2026-10-25", { params: { regoin: "uk" } })).rejects.toThrow(refusal);
    await expect(t.engine.trigger("dates", "2026-10-25", { params: { regoin: "uk" } })).rejects.toThrow(refusal);
    expect(await t.engine.run("dates@2026-10-25").catch(() => null)).toBeNull();
    const none = pipeline("bare", { schedule: london }, { look: { run: () => {} } });
    await t.close();
    t = await openTestEngine([none], new FakeClock("2026-12-25T12:00:00Z"));
    await expect(t.engine.trigger("bare", "2026-10-25", { params: { foo: "bar" } })).rejects.toThrow('pipeline bare: param "foo" is not declared by the pipeline (it declares none)');
  });

  it("runs independent tasks at the same time, up to the limit", async () => {
    let running = 0;
    let most = 0;
    const work = async () => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 20));
      running--;
    };
    const p = pipeline("wide", { schedule: london }, Object.fromEntries(
      Array.from({ length: 6 }, (_, i) => [`t${i}`, { run: work }]),
    ));
    t = await openTestEngine([p], systemClock);
    await t.engine.runForDate("wide", "2026-09-01", { concurrency: 3 });
    expect(most).toBe(3);
  });

  it("retries a failing task with exponential backoff, on the clock, then succeeds", async () => {
    const clock = new FakeClock("2026-09-02T03:00:00Z");
    const triedAt: number[] = [];
    const p = pipeline("flaky", { schedule: london }, {
      fetch: {
        retries: 3,
        retryDelay: "1m",
        backoff: "exponential",
        run: (ctx) => {
          triedAt.push(clock.now());
          if (ctx.tryNumber < 3) throw new Error(`network down (try ${ctx.tryNumber})`);
          return { ok: 1 };
        },
      },
    });
    t = await openTestEngine([p], clock);
    const result = await t.engine.runForDate("flaky", "2026-09-01");
    expect(result.run.state).toBe("success");
    const gaps = triedAt.slice(1).map((at, i) => at - triedAt[i]!);
    expect(gaps).toEqual([60_000, 120_000]);
    const attempts = await t.store.listAttempts("flaky@2026-09-01", "fetch");
    expect(attempts.map((a) => [a.tryNumber, a.state, a.errorMessage])).toEqual([
      [1, "failed", "network down (try 1)"],
      [2, "failed", "network down (try 2)"],
      [3, "success", null],
    ]);
  });

  it("never retries a data error, and marks downstream upstream_failed", async () => {
    let tries = 0;
    const p = pipeline("checked", { schedule: london }, {
      check: { retries: 5, run: () => { tries++; throw new DataError("2026-09-01: 6 rows for the file's 3 orders, 0 missing"); } },
      publish: { after: ["check"], run: () => {} },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    const result = await t.engine.runForDate("checked", "2026-09-01");
    expect(tries).toBe(1);
    expect(result.run.state).toBe("failed");
    expect(result.tasks.map((x) => x.state)).toEqual(["failed", "upstream_failed"]);
    const [attempt] = await t.store.listAttempts("checked@2026-09-01", "check");
    expect(attempt).toMatchObject({ errorClass: "DataError", errorMessage: "2026-09-01: 6 rows for the file's 3 orders, 0 missing" });
  });

  it("skips with a reason and lets the skip flow downstream", async () => {
    const p = pipeline("quiet", { schedule: london }, {
      look: { run: (ctx) => ctx.skip("the shop was closed") },
      load: { after: ["look"], run: () => { throw new Error("must not run"); } },
      report: { after: ["load"], triggerRule: "all_done", run: () => ({ reported: 1 }) },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    const result = await t.engine.runForDate("quiet", "2026-09-01");
    expect(result.run.state).toBe("success");
    expect(Object.fromEntries(result.tasks.map((x) => [x.taskId, [x.state, x.reason]]))).toEqual({
      look: ["skipped", "the shop was closed"],
      load: ["skipped", "upstream: 1 task(s) skipped"],
      report: ["success", null],
    });
  });

  it("fires the signal of a task that runs past its timeout and fails the attempt", async () => {
    let aborted = false;
    const p = pipeline("slow", { schedule: london }, {
      wait: {
        timeout: 50,
        run: (ctx) =>
          new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => { aborted = true; resolve(); })),
      },
    });
    t = await openTestEngine([p], systemClock);
    const result = await t.engine.runForDate("slow", "2026-09-01");
    expect(aborted).toBe(true);
    expect(result.run.state).toBe("failed");
    const [attempt] = await t.store.listAttempts("slow@2026-09-01", "wait");
    expect(attempt).toMatchObject({ state: "failed", errorClass: "Timeout", errorMessage: "timed out after 50ms" });
  });

  it("fails a task that ignores its signal once the grace period is over", async () => {
    const p = pipeline("stubborn", { schedule: london }, {
      hang: { timeout: 30, killGrace: 50, run: () => new Promise<void>(() => {}) },
    });
    // Timeouts bound real work, so even a fake schedule clock does not make them fire early.
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    const result = await t.engine.runForDate("stubborn", "2026-09-01");
    expect(result.run.state).toBe("failed");
    const [attempt] = await t.store.listAttempts("stubborn@2026-09-01", "hang");
    expect(attempt!.errorMessage).toMatch(/timed out after 30ms; it did not stop within 50ms/);
  });

  it("rejects a summary over 64 KiB without retrying", async () => {
    let tries = 0;
    const p = pipeline("greedy", { schedule: london }, {
      dump: { retries: 2, run: () => { tries++; return { rows: "x".repeat(70_000) }; } },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    const result = await t.engine.runForDate("greedy", "2026-09-01");
    expect(tries).toBe(1);
    expect(result.run.state).toBe("failed");
    const [attempt] = await t.store.listAttempts("greedy@2026-09-01", "dump");
    expect(attempt).toMatchObject({ errorClass: "SummaryTooLarge", summary: null });
    expect(attempt!.errorMessage).toMatch(/summary is 700\d\d bytes; the store keeps at most 65536/);
  });

  it("writes the task's log lines to the attempt's own log file", async () => {
    const p = pipeline("chatty", { schedule: london }, {
      talk: { run: (ctx) => { ctx.log.info("loaded", { rows: 3 }); ctx.log.warn("late file"); } },
    });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    await t.engine.runForDate("chatty", "2026-09-01");
    const { attempt, text } = await t.engine.log("chatty@2026-09-01", "talk");
    expect(attempt.logPath).toMatch(/logs\/chatty@2026-09-01\/talk\/try-1\.log$/);
    expect(text).toMatch(/^2026-09-02T03:00:00.000Z INFO loaded \{"rows":3\}\n.* WARN late file\n$/);
  });

  it("runs the same run again for the same date: no twin, tries continue", async () => {
    const p = pipeline("again", { schedule: london }, { load: { run: () => ({ rows: 1 }) } });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    const first = await t.engine.runForDate("again", "2026-09-01");
    const second = await t.engine.runForDate("again", "2026-09-01", { reason: "late file arrived" });
    expect(first.created).toBe(true);
    expect(second.created).toBe(false);
    expect(await t.store.listRuns({ pipelineId: "again" })).toHaveLength(1);
    expect(second.tasks[0]).toMatchObject({ tryNumber: 2, state: "success" });
    const audit = await t.store.listAudit({ pipelineId: "again" });
    expect(audit.map((a) => [a.action, a.reason])).toEqual([["rerun", "late file arrived"], ["trigger", null]]);
  });

  it("refuses an unknown pipeline, a bad date, and a date before the pipeline's start", async () => {
    const p = pipeline("bounded", { schedule: london, start: "2026-09-01" }, { a: { run: () => {} } });
    t = await openTestEngine([p], new FakeClock("2026-09-02T03:00:00Z"));
    await expect(t.engine.runForDate("nope", "2026-09-01")).rejects.toThrow('unknown pipeline "nope" (known: bounded)');
    await expect(t.engine.runForDate("bounded", "2026-02-30")).rejects.toThrow(/pipeline bounded: bad date "2026-02-30"/);
    await expect(t.engine.runForDate("bounded", "2026-08-31")).rejects.toThrow(/2026-08-31 is before the pipeline's start/);
    expect(await t.store.listRuns({})).toEqual([]);
  });
});

describe("command tasks", () => {
  it("pass the run's identity in the environment and may write a summary", async () => {
    const p = pipeline("shell", { schedule: london }, {
      report: {
        command: ["bash", "-c", 'echo "$IDEM_PIPELINE $IDEM_TASK $IDEM_BUSINESS_DATE $IDEM_TRY $IDEM_RUN_ID $IDEM_INTERVAL_START $IDEM_INTERVAL_END"; echo \'{"files":2}\' > "$IDEM_SUMMARY_FILE"'],
      },
    });
    t = await openTestEngine([p], systemClock);
    const result = await t.engine.runForDate("shell", "2026-09-01");
    expect(result.run.state).toBe("success");
    const { attempt, text } = await t.engine.log("shell@2026-09-01", "report");
    expect(text.trim()).toBe("shell report 2026-09-01 1 shell@2026-09-01 2026-08-31T23:00:00.000Z 2026-09-01T23:00:00.000Z");
    expect(attempt).toMatchObject({ exitCode: 0, summary: { files: 2 } });
  });

  it("fail with the exit code, and exit 65 is a data error that is not retried", async () => {
    const p = pipeline("exits", { schedule: london }, {
      crash: { retries: 1, retryDelay: 0, command: ["bash", "-c", "echo oops >&2; exit 3"] },
      bad_data: { retries: 3, command: ["bash", "-c", "exit 65"] },
    });
    t = await openTestEngine([p], systemClock);
    const result = await t.engine.runForDate("exits", "2026-09-01");
    expect(result.run.state).toBe("failed");
    const crash = await t.store.listAttempts("exits@2026-09-01", "crash");
    expect(crash.map((a) => [a.exitCode, a.errorClass])).toEqual([[3, "ExitCode"], [3, "ExitCode"]]);
    expect(readFileSync(crash[0]!.logPath, "utf8")).toMatch(/oops/);
    const badData = await t.store.listAttempts("exits@2026-09-01", "bad_data");
    expect(badData.map((a) => [a.exitCode, a.errorClass])).toEqual([[65, "DataError"]]);
  });

  it("are killed with their whole process group when they time out", async () => {
    const p = pipeline("hang", { schedule: london }, {
      sleepy: {
        timeout: 300,
        killGrace: 200,
        // the child ignores SIGTERM and starts a grandchild that would outlive it
        command: ["bash", "-c", 'trap "" TERM; sleep 30 & echo "grandchild $!"; wait'],
      },
    });
    t = await openTestEngine([p], systemClock);
    const result = await t.engine.runForDate("hang", "2026-09-01");
    expect(result.run.state).toBe("failed");
    const { attempt, text } = await t.engine.log("hang@2026-09-01", "sleepy");
    expect(attempt.errorClass).toBe("Timeout");
    const grandchild = Number(/grandchild (\d+)/.exec(text)![1]);
    expect(isAlive(grandchild)).toBe(false);
  });

  it("that cannot start fail once with a clear message", async () => {
    const p = pipeline("typo", { schedule: london }, { run: { retries: 3, command: ["no-such-program-idem"] } });
    t = await openTestEngine([p], systemClock);
    await t.engine.runForDate("typo", "2026-09-01");
    const attempts = await t.store.listAttempts("typo@2026-09-01", "run");
    expect(attempts.map((a) => a.errorMessage)).toEqual(["command not found: no-such-program-idem"]);
  });
});

/** Running, and not a zombie waiting for a parent (PID 1 in a container may never reap it). */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}
