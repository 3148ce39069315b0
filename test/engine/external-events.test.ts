import { afterEach, describe, expect, it } from "vitest";
import { ArgumentError, NotFoundError } from "../../src/core/model/errors.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily, manual, weekly } from "../../src/core/time/index.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

const timezone = "Europe/London"; // GMT in November: local times equal UTC

describe("dataset events from outside idem", () => {
  it("trigger a consumer's run for the interval that holds the business date, once, however often the event is sent", async () => {
    const seen: string[] = [];
    const week = pipeline("weekly_prices", { schedule: weekly({ on: "monday", at: "06:00", timezone }), start: "2026-11-02", triggerOn: ["vendor_prices"] }, {
      roll: { run: (ctx) => void seen.push(`week ${ctx.businessDate} try ${ctx.tryNumber}`) },
    });
    // Runs only when the data comes: a manual schedule's interval for an event is its day.
    const day = pipeline("daily_prices", { schedule: manual({ timezone }), start: "2026-11-02", triggerOn: ["vendor_prices"] }, {
      load: { run: (ctx) => void seen.push(`day ${ctx.businessDate} try ${ctx.tryNumber}`) },
    });
    h = await ScheduleHarness.open([week, day], "2026-11-05T09:00:00Z");

    const first = await h.engine.emitDatasetEvent("vendor_prices", { businessDate: "2026-11-04", idempotencyKey: "prices-2026-11-04", summary: { rows: 120 }, source: "api", actor: "vendor-sftp" });
    expect(first).toMatchObject({ created: true, ignored: [], event: { dataset: "vendor_prices", businessDate: "2026-11-04", source: "api", actor: "vendor-sftp", summary: '{"rows":120}' } });
    expect(first.audit).toMatchObject({ action: "dataset-event", actor: "vendor-sftp", details: { dataset: "vendor_prices", businessDate: "2026-11-04", source: "api", idempotencyKey: "prices-2026-11-04" } });
    // The sender retries, with another body: the first event answers, nothing is written.
    const again = await h.engine.emitDatasetEvent("vendor_prices", { businessDate: "2026-11-05", idempotencyKey: "prices-2026-11-04", summary: { rows: 121 }, source: "cli", actor: "ana" });
    expect(again).toEqual({ event: first.event, created: false, audit: null, ignored: ["businessDate", "summary"] });
    expect(await h.engine.emitDatasetEvent("vendor_prices", { businessDate: "2026-11-04", idempotencyKey: "prices-2026-11-04", summary: { rows: 120 }, source: "webhook", actor: "webhook" }))
      .toMatchObject({ created: false, ignored: [] });

    await h.at("2026-11-05T10:00:00Z");
    expect((await h.runs("daily_prices")).map((r) => [r.businessDate, r.trigger, r.state])).toEqual([["2026-11-04", "data", "success"]]);
    // The week holding 11-04 is due on Monday 11-09 06:00, not before.
    expect(await h.runs("weekly_prices")).toEqual([]);
    await h.at("2026-11-09T06:00:00Z");
    expect((await h.runs("weekly_prices")).map((r) => [r.businessDate, r.trigger, r.state])).toEqual([["2026-11-02", "data", "success"]]);
    await h.at("2026-11-10T06:00:00Z");
    expect(seen).toEqual(["day 2026-11-04 try 1", "week 2026-11-02 try 1"]);

    // Sent once more after the runs: still nothing; a new delivery of a day inside the week reruns it.
    await h.engine.emitDatasetEvent("vendor_prices", { businessDate: "2026-11-04", idempotencyKey: "prices-2026-11-04", source: "api", actor: "vendor-sftp", summary: { rows: 120 } });
    await h.at("2026-11-10T07:00:00Z");
    expect(seen).toHaveLength(2);
    await h.engine.emitDatasetEvent("vendor_prices", { businessDate: "2026-11-06", idempotencyKey: "prices-2026-11-06", source: "api", actor: "vendor-sftp" });
    await h.at("2026-11-10T08:00:00Z");
    expect(seen.slice(2).sort()).toEqual(["day 2026-11-06 try 1", "week 2026-11-02 try 2"]);
    expect((await h.store.listAudit({})).filter((a) => a.action === "dataset-event").map((a) => a.details.idempotencyKey)).toEqual(["prices-2026-11-06", "prices-2026-11-04"]);
  });

  it("refuses what it cannot take, naming it, and writes nothing", async () => {
    const consumer = pipeline("daily_prices", { schedule: daily({ at: "02:00", timezone }), start: "2026-11-02", triggerOn: ["vendor_prices"] }, { load: { run: () => {} } });
    h = await ScheduleHarness.open([consumer], "2026-11-05T09:00:00Z");
    const emit = (dataset: string, request: { businessDate?: string; idempotencyKey?: string; summary?: unknown } = {}) =>
      h.engine.emitDatasetEvent(dataset, { businessDate: "2026-11-04", idempotencyKey: "k", source: "api", actor: "a", ...request });

    await expect(emit("vendor_pricez")).rejects.toThrow(new NotFoundError("dataset", 'unknown dataset "vendor_pricez": no pipeline produces, publishes, waits on or promises it (known: vendor_prices)'));
    const refusal = async (promise: Promise<unknown>) => promise.then(() => null, (error: unknown) => error as ArgumentError);
    const badDate = await refusal(emit("vendor_prices", { businessDate: "2026-02-30" }));
    expect([badDate?.argument, badDate?.message]).toEqual(["businessDate", 'businessDate: bad date "2026-02-30": not a calendar date (expected YYYY-MM-DD)']);
    const long = await refusal(emit("vendor_prices", { idempotencyKey: "k".repeat(256) }));
    expect([long?.argument, long?.message]).toEqual(["idempotencyKey", "idempotencyKey: 256 characters; at most 255"]);
    const control = await refusal(emit("vendor_prices", { idempotencyKey: "a\nb" }));
    expect([control?.argument, control?.message]).toEqual(["idempotencyKey", "idempotencyKey: control character U+000A at position 2"]);
    const big = await refusal(emit("vendor_prices", { summary: { text: "x".repeat(70_000) } }));
    expect(big?.argument).toBe("summary");
    expect(await h.store.listDatasetEvents({})).toEqual([]);
    expect(await h.store.listAudit({})).toEqual([]);
  });
});
