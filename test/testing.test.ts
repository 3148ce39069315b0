import { describe, expect, it } from "vitest";
import { DataError } from "idem";
import { runTask, testContext } from "idem/testing";

describe("idem/testing: task code without a scheduler", () => {
  it("gives a task the business date's calendar day in its zone, the names, params and try it asks for", () => {
    // 2026-03-29 is 23 hours long in Berlin (clocks go forward).
    const ctx = testContext({ businessDate: "2026-03-29", timezone: "Europe/Berlin", params: { region: "eu" }, tryNumber: 2, pipelineId: "sales", taskId: "load" });
    expect(ctx.interval.start.toString()).toBe("2026-03-29T00:00:00+01:00[Europe/Berlin]");
    expect(ctx.interval.end.toString()).toBe("2026-03-30T00:00:00+02:00[Europe/Berlin]");
    expect(ctx.interval.start.until(ctx.interval.end).total("hours")).toBe(23);
    expect([ctx.runId, ctx.pipelineId, ctx.taskId, ctx.businessDate, ctx.tryNumber]).toEqual(["sales@2026-03-29", "sales", "load", "2026-03-29", 2]);
    expect(ctx.params).toEqual({ region: "eu" });
    expect(ctx.signal.aborted).toBe(false);
  });

  it("refuses a business date that is not one, naming it", () => {
    expect(() => testContext({ businessDate: "2026-02-30" })).toThrow(/2026-02-30/);
  });

  it("runs a task function and hands back its summary and log lines", async () => {
    const result = await runTask(
      async (ctx) => {
        ctx.log.info("read", { rows: 3 });
        ctx.log.warn("late rows");
        return { rows: 3 };
      },
      { businessDate: "2026-05-01" },
    );
    expect(result).toEqual({ summary: { rows: 3 }, lines: ['INFO read {"rows":3}', "WARN late rows"] });
  });

  it("turns ctx.skip into { skipped: reason }, and lets any other error through", async () => {
    expect(await runTask((ctx) => ctx.skip("no file for the day"), { businessDate: "2026-05-01" })).toEqual({
      summary: undefined,
      skipped: "no file for the day",
      lines: [],
    });
    await expect(runTask(() => { throw new DataError("3 rows without a key"); }, { businessDate: "2026-05-01" })).rejects.toThrow(DataError);
  });

  it("keeps watermarks in memory, per task, and never lowers one", async () => {
    const ctx = testContext({ businessDate: "2026-05-01", taskId: "orders" });
    await ctx.watermarks.save("test", "orders", 10);
    await ctx.watermarks.save("test", "orders", 7);
    expect(await ctx.watermarks.get("test", "orders")).toBe(10);
    expect(await ctx.watermarks.get("test", "other")).toBeNull();
  });
});
