import { eventsLoggedTo } from "../support/events.ts";
import { EngineEvents } from "../../src/engine/events/engine-events.ts";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { FreshnessChecker } from "../../src/engine/freshness/checker.ts";
import { AlertDispatcher } from "../../src/engine/freshness/alert-dispatcher.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
let server: Server;
let received: { event: string; kind: string; key: string; message: string; resolution: string | null; resolvedBy: string | null }[];
let hookUrl: string;

beforeEach(async () => {
  received = [];
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      received.push(JSON.parse(body));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`;
});
afterEach(async () => {
  await h?.close();
  await new Promise((r) => server.close(r));
});

function shop(start: string) {
  return pipeline(
    "shop_orders",
    {
      schedule: daily({ at: "02:00", timezone: "Europe/London" }),
      start,
      maxActiveRuns: 3,
      promises: [{ dataset: "orders_daily", deadline: "D+1 06:00", notify: ["hook"] }],
    },
    { publish: { publishes: "orders_daily", run: () => ({ orders: 3 }) } },
  );
}

async function open(start: string, now: string) {
  h = await ScheduleHarness.open([shop(start)], now);
  const checker = new FreshnessChecker({ store: h.store, pipelines: h.pipelines, defaultNotify: ["hook"] });
  const dispatcher = new AlertDispatcher({ store: h.store, clock: h.clock, notifiers: { hook: { webhook: { url: hookUrl } } }, events: new EngineEvents() });
  const check = async () => {
    await checker.check(h.clock.now());
    await dispatcher.deliverDue();
  };
  return {
    check,
    /** Moves the clock, runs what is due, checks promises and delivers alerts. */
    at: async (iso: string) => {
      await h.at(iso);
      await check();
    },
  };
}

const alerts = () => received.map((a) => `${a.event} ${a.kind}`);
const openIncidents = async () => (await h.engine.incidents({ open: true })).map((i) => i.kind);

describe("incidents that end", () => {
  it("a publication after the deadline resolves the SLA missed incident and is recorded as a closed fact, alerted once", async () => {
    const { at } = await open("2026-09-01", "2026-09-01T00:00:00Z");
    await at("2026-09-01T12:00:00Z"); // the promise is recorded, long before the first deadline
    await h.engine.pause("shop_orders", { note: "till migration" });
    await at("2026-09-02T05:00:00Z"); // 06:00 London: the deadline of 2026-09-01 passes
    expect(alerts()).toEqual(["open sla_missed", "open did_not_run"]);
    await h.engine.unpause("shop_orders");
    await at("2026-09-02T06:00:00Z"); // published at 07:00 London, an hour late
    expect(alerts().slice(2).sort()).toEqual(["resolve did_not_run", "resolve sla_missed"]);
    expect(received.find((a) => a.event === "resolve" && a.kind === "sla_missed")).toMatchObject({ resolvedBy: "watchdog", resolution: "published at 2026-09-02 07:00 Europe/London" });
    expect(await openIncidents()).toEqual([]);
    const fact = (await h.engine.incidents({})).find((i) => i.kind === "late_publication")!;
    expect(fact).toMatchObject({ resolvedBy: "watchdog", resolution: "closed by its publication at 2026-09-02 07:00 Europe/London" });
    expect(fact.message).toBe("orders_daily for 2026-09-01 was published at 2026-09-02 07:00 Europe/London, after its deadline 2026-09-02 06:00 Europe/London");
    const audit = await h.engine.audit({});
    expect(audit.filter((e) => e.action === "incident-resolve").map((e) => `${e.actor} ${e.details.incident}`).sort()).toEqual([
      "watchdog did_not_run:shop_orders:2026-09-01", "watchdog late_publication:orders_daily:2026-09-01", "watchdog sla_missed:orders_daily:2026-09-01",
    ]);
  });

  it("a late publication nobody was paged for alerts once, on its own, and is closed at once", async () => {
    const { check } = await open("2026-09-01", "2026-09-01T00:00:00Z");
    await h.at("2026-09-01T12:00:00Z");
    await h.engine.pause("shop_orders");
    await h.at("2026-09-02T05:30:00Z"); // past the deadline, but no checker looked meanwhile
    await h.engine.unpause("shop_orders");
    await h.at("2026-09-02T05:40:00Z");
    await check();
    await check();
    expect(alerts()).toEqual(["open late_publication"]);
    expect(await openIncidents()).toEqual([]);
  });

  it("a first catch-up of 30 days pages for no date whose deadline passed before the promise existed: one summary, resolved when caught up", async () => {
    const { check, at } = await open("2026-09-01", "2026-10-01T10:00:00Z");
    await h.scheduler.tick(); // the scheduler records the pipeline (and its promise) and starts catching up
    await check(); // before a single task ran
    expect(alerts()).toEqual(["open before_promise"]);
    expect(received[0]!.message).toBe(
      "orders_daily: 8 business dates (2026-09-23 to 2026-09-30) had their deadline before the promise existed (2026-10-01 11:00 Europe/London) and are not published; a catch-up publishes them without an alert each",
    );
    expect(await openIncidents()).toEqual(["before_promise"]);

    await at("2026-10-01T10:05:00Z"); // the catch-up runs every day
    expect(alerts()).toEqual(["open before_promise", "resolve before_promise"]);
    expect(await openIncidents()).toEqual([]);
    expect((await h.engine.incidents({})).map((i) => i.kind)).toEqual(["before_promise"]);

    // A deadline that passes after the promise existed pages as ever.
    await h.engine.pause("shop_orders");
    await at("2026-10-02T05:00:00Z");
    expect(alerts().slice(2)).toEqual(["open sla_missed", "open did_not_run"]);
  });

  it("a snooze that ends with the incident unresolved is told once to each notifier told of the opening; an acknowledgement without an end never comes back", async () => {
    const told = shop("2026-09-01");
    const bothTold = { ...told, promises: told.promises.map((p) => ({ ...p, notify: ["hook", "ops"] })) };
    h = await ScheduleHarness.open([bothTold], "2026-09-01T00:00:00Z");
    const logged: string[] = [];
    const checker = new FreshnessChecker({ store: h.store, pipelines: h.pipelines });
    const dispatcher = new AlertDispatcher({ store: h.store, clock: h.clock, notifiers: { hook: { webhook: { url: hookUrl } }, ops: { log: true } }, events: eventsLoggedTo(logged) });
    const check = async () => {
      const result = await checker.check(h.clock.now());
      await dispatcher.deliverDue();
      return result.reopened;
    };
    await h.at("2026-09-01T12:00:00Z");
    await h.engine.pause("shop_orders");
    await h.at("2026-09-02T05:00:00Z"); // the deadline of 2026-09-01 passes unpublished
    await check();
    expect(alerts()).toEqual(["open sla_missed", "open did_not_run"]);
    const sla = "sla_missed:orders_daily:2026-09-01";
    const didNotRun = "did_not_run:shop_orders:2026-09-01";
    await h.engine.acknowledgeIncident(sla, { reason: "upstream late", for: 3_600_000, actor: "ana" });
    await h.engine.acknowledgeIncident(didNotRun, { reason: "paused for the migration", actor: "ana" });
    h.clock.set("2026-09-02T05:59:59Z");
    expect(await check()).toEqual([]);

    h.clock.set("2026-09-02T06:00:01Z"); // the snooze of an hour has ended
    expect(await check()).toEqual([sla]);
    expect(await check()).toEqual([]);
    const reopens = received.filter((a) => a.event === "reopen");
    expect(reopens.map((a) => a.key)).toEqual([sla]);
    expect(reopens[0]!.message).toMatch(/^snooze ended: still SLA missed: orders_daily for 2026-09-01 is not published/);
    expect(logged.filter((line) => line.startsWith("ALERT SNOOZE ENDED"))).toEqual([
      expect.stringMatching(/^ALERT SNOOZE ENDED sla_missed:orders_daily:2026-09-01: snooze ended: still SLA missed: /),
    ]);
    expect((await h.engine.incident(sla)).state).toBe("open");

    h.clock.set("2026-09-09T06:00:00Z"); // a week on, the acknowledgement without an end holds
    expect(await check()).toEqual([]);
    expect(received.filter((a) => a.event === "reopen").length).toBe(1);
    expect(logged.filter((line) => line.startsWith("ALERT SNOOZE ENDED")).length).toBe(1);
    expect((await h.engine.incident(didNotRun)).state).toBe("acknowledged");
  });
});
