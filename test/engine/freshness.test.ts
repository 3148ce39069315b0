import { eventsLoggedTo } from "../support/events.ts";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { instantFor, parseRelativeTime } from "../../src/core/pipeline/promise.ts";
import { daily } from "../../src/core/time/index.ts";
import { FreshnessChecker } from "../../src/engine/freshness/checker.ts";
import { AlertDispatcher } from "../../src/engine/freshness/alert-dispatcher.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
let server: Server;
let received: { event: string; kind: string; message: string; key: string }[];
let webhookStatus: number;
let hookUrl: string;
const logs: string[] = [];

beforeEach(async () => {
  received = [];
  webhookStatus = 200;
  logs.length = 0;
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      if (webhookStatus === 200) received.push(JSON.parse(body));
      res.writeHead(webhookStatus).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`;
});
afterEach(async () => {
  await h?.close();
  await new Promise((r) => server.close(r));
});

const state = { failUntilFixed: false, fixed: false, empty: false, difference: 0 };

function shop(retries = 0) {
  return pipeline(
    "shop_orders",
    {
      schedule: daily({ at: "02:00", timezone: "Europe/London" }),
      start: "2026-09-01",
      promises: [{ dataset: "orders_daily", deadline: "D+1 06:00", slo: "D+1 05:30", completeness: { equals: { difference: 0 } }, owner: "finance-data", notify: ["hook"] }],
    },
    {
      load: {
        retries,
        retryDelay: "5m",
        run: () => {
          if (state.failUntilFixed && !state.fixed) throw new Error("the till's file is late");
        },
      },
      publish: {
        after: ["load"],
        publishes: "orders_daily",
        run: () => (state.empty ? { empty: "shop closed: no orders", difference: 99 } : { orders: 3, difference: state.difference }),
      },
    },
  );
}

async function open(retries = 0) {
  Object.assign(state, { failUntilFixed: false, fixed: false, empty: false, difference: 0 });
  h = await ScheduleHarness.open([shop(retries)], "2026-09-01T00:00:00Z");
  const checker = new FreshnessChecker({ store: h.store, pipelines: h.pipelines, defaultNotify: ["hook"], events: eventsLoggedTo(logs) });
  const env = { HOOK_URL: hookUrl };
  const dispatcher = new AlertDispatcher({ store: h.store, clock: h.clock, notifiers: { hook: { webhook: { url: "$HOOK_URL" } } }, events: eventsLoggedTo(logs), env, retryMs: 60_000 });
  /** Moves the clock, runs what is due, checks promises and delivers alerts. */
  const at = async (iso: string) => {
    await h.at(iso);
    await checker.check(h.clock.now());
    await dispatcher.deliverDue();
  };
  return { checker, dispatcher, at };
}

const alerts = () => received.map((a) => `${a.event} ${a.kind}`);

describe("freshness promises", () => {
  it("are kept when D is published before the SLO: no alert, status on time", async () => {
    const { at } = await open();
    await at("2026-09-02T02:00:00Z"); // 03:00 London: the run publishes
    await at("2026-09-02T06:00:00Z");
    expect(alerts()).toEqual([]);
    const report = await h.engine.freshness();
    expect(report.datasets[0]).toMatchObject({ dataset: "orders_daily", newest: { businessDate: "2026-09-01" }, due: { businessDate: "2026-09-01", status: "on_time" } });
  });

  it("alert once when late at the SLO, and once more when the day is published before the deadline", async () => {
    const { at } = await open();
    state.failUntilFixed = true;
    await at("2026-09-02T01:00:00Z"); // the run fails
    await at("2026-09-02T04:30:00Z"); // 05:30 London: the SLO passes
    await at("2026-09-02T04:40:00Z"); // checked again: no second alert
    expect(alerts()).toEqual(["open run_failed", "open late"]);
    state.fixed = true;
    await h.engine.runForDate("shop_orders", "2026-09-01");
    await at("2026-09-02T04:50:00Z");
    expect(alerts().slice(0, 2)).toEqual(["open run_failed", "open late"]);
    expect(alerts().slice(2).sort()).toEqual(["resolve late", "resolve run_failed"]);
    expect(received[1]!.message).toBe("late: orders_daily for 2026-09-01 is not published at its SLO 2026-09-02 05:30 Europe/London; the deadline is 2026-09-02 06:00 Europe/London");
    expect((await h.engine.freshness()).datasets[0]!.due!.status).toBe("late");
  });

  it("alert SLA missed at the deadline, and record a publication after it as late", async () => {
    const { at } = await open();
    await h.engine.pause("shop_orders", { note: "till migration" });
    await at("2026-09-02T05:00:00Z"); // 06:00 London: first looked at after the deadline, so SLA missed it is
    expect(alerts()).toEqual(["open sla_missed", "open did_not_run"]);
    expect(received[0]!.message).toBe("SLA missed: orders_daily for 2026-09-01 is not published; the deadline was 2026-09-02 06:00 Europe/London (owner finance-data)");
    expect(received[1]!.message).toMatch(/^did not run: shop_orders has no run for 2026-09-01, due at 2026-09-02 02:00 Europe\/London; likely cause: pipeline is paused \(till migration\)$/);
    await h.engine.unpause("shop_orders");
    await at("2026-09-02T06:00:00Z");
    expect(alerts().slice(2).sort()).toEqual(["resolve did_not_run", "resolve sla_missed"]);
    const incidents = await h.engine.incidents({ open: false });
    const late = incidents.find((i) => i.kind === "late_publication");
    expect(late!.message).toBe("orders_daily for 2026-09-01 was published at 2026-09-02 07:00 Europe/London, after its deadline 2026-09-02 06:00 Europe/London");
    expect((await h.engine.freshness()).datasets[0]!.due!.status).toBe("missed");
  });

  it("send one alert for a run that fails for good after three retries", async () => {
    const { at } = await open(3);
    state.failUntilFixed = true;
    for (const minute of [0, 5, 10, 15, 20, 25]) await at(`2026-09-02T01:${String(minute).padStart(2, "0")}:00Z`);
    const tries = await h.store.listAttempts("shop_orders@2026-09-01", "load");
    expect(tries).toHaveLength(4);
    expect(alerts()).toEqual(["open run_failed"]);
    expect(received[0]!.message).toBe("run shop_orders@2026-09-01 failed: load after 4 tries: the till's file is late");
  });

  it("publish a day declared empty, with its reason, and raise no alarm", async () => {
    const { at } = await open();
    state.empty = true;
    await at("2026-09-02T06:00:00Z");
    expect(alerts()).toEqual([]);
    const [row] = await h.store.listFreshness("orders_daily", "2026-09-01", "2026-09-01");
    expect(row!.emptyReason).toBe("shop closed: no orders");
  });

  it("do not publish an incomplete day: the completeness condition fails the publishing task", async () => {
    const { at } = await open();
    state.difference = 3.2;
    await at("2026-09-02T02:00:00Z");
    const [attempt] = await h.store.listAttempts("shop_orders@2026-09-01", "publish");
    expect(attempt).toMatchObject({ errorClass: "DataError", errorMessage: "orders_daily is not complete, so it is not published: difference is 3.2, not 0" });
    expect(await h.store.listFreshness("orders_daily", "2026-09-01", "2026-09-01")).toEqual([]);
  });

  it("keep retrying an alert while the webhook is down, without holding up the scheduler", async () => {
    const { at, dispatcher } = await open();
    webhookStatus = 503;
    state.failUntilFixed = true;
    await at("2026-09-02T01:00:00Z");
    expect(received).toEqual([]);
    expect(logs.some((l) => /alert open run_failed:shop_orders@2026-09-01:\d+ to hook failed \(webhook hook: HTTP 503\); retrying in 60s/.test(l))).toBe(true);
    expect(logs.join("\n")).not.toContain(hookUrl); // the secret URL never reaches a log
    webhookStatus = 200;
    h.clock.advance(30_000);
    expect(await dispatcher.deliverDue()).toBe(0); // not due yet
    h.clock.advance(30_000);
    expect(await dispatcher.deliverDue()).toBe(1);
    expect(alerts()).toEqual(["open run_failed"]);
  });

  it("deduplicate across a scheduler restart: a new checker does not alert again", async () => {
    const { at } = await open();
    await h.engine.pause("shop_orders");
    await at("2026-09-02T05:00:00Z");
    const before = alerts().length;
    const restarted = new FreshnessChecker({ store: h.store, pipelines: h.pipelines, defaultNotify: ["hook"] });
    expect(await restarted.check(h.clock.now())).toEqual({ opened: [], reopened: [], resolved: [] });
    expect(before).toBe(2);
  });

  it("compute deadlines in the promise's zone across DST", () => {
    const deadline = parseRelativeTime("D+1 06:00", "deadline");
    expect(new Date(instantFor(deadline, "2026-03-28", "Europe/London")).toISOString()).toBe("2026-03-29T05:00:00.000Z");
    expect(new Date(instantFor(deadline, "2026-10-24", "Europe/London")).toISOString()).toBe("2026-10-25T06:00:00.000Z");
    expect(new Date(instantFor(parseRelativeTime("D+1 01:30", "x"), "2026-03-28", "Europe/London")).toISOString()).toBe("2026-03-29T01:30:00.000Z");
  });
});
