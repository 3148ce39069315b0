import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { launchChromium } from "../support/chromium.ts";
import { ScheduleHarness } from "../support/scheduling.ts";
import { startUiServer, UI_LOCAL_USER } from "../support/ui-server.ts";

const KEY = "sla_missed:orders_daily:2026-09-01";

let browser: Browser;
let h: ScheduleHarness;
let server: { url: string; close(): Promise<void> };

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());
afterEach(async () => {
  await server?.close();
  await h?.close();
});

describe("incidents on the on-call page", () => {
  it("are acknowledged, then resolved, each in one click with a reason: audited with the person, and the resolution queued for the notifier told of the opening", async () => {
    const shop = pipeline("shop_orders", { schedule: daily({ at: "02:00", timezone: "UTC" }), start: "2026-09-01" }, { load: { run: () => ({ rows: 1 }) } });
    h = await ScheduleHarness.open([shop], "2026-09-02T07:00:00Z");
    await h.store.openIncident({
      key: KEY, kind: "sla_missed", dataset: "orders_daily", pipelineId: "shop_orders", businessDate: "2026-09-01", runId: null,
      message: "SLA missed: orders_daily for 2026-09-01 is not published; the deadline was 2026-09-02 06:00 UTC", notify: ["log"], at: h.clock.now(),
    });
    server = await startUiServer(h.engine);
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId: "UTC" });
    const page = await context.newPage();
    await page.goto(`${server.url}/ui`);
    const item = page.locator(`li[data-incident="${KEY}"]`);
    expect(await item.locator(".incident-state").textContent()).toContain("open");

    // The reason is required: the browser stops an empty one.
    await item.locator("button", { hasText: "Acknowledge" }).click();
    expect(await item.locator("input[name=reason]").evaluate((input: HTMLInputElement) => input.validity.valueMissing)).toBe(true);

    await item.locator("input[name=reason]").fill("the till's file is late, vendor called");
    await item.locator("button", { hasText: "Acknowledge" }).click();
    // The message is told once, in the page the action returns to (not in its URL).
    await expect.poll(() => page.locator("#flash").textContent()).toMatch(new RegExp(`Acknowledged ${KEY}\\. Audit entry #\\d+ by ${UI_LOCAL_USER}\\.`));
    const state = await page.locator(`li[data-incident="${KEY}"] .incident-state`).textContent();
    expect(state).toContain(`acknowledged by ${UI_LOCAL_USER}`);
    expect(state).toContain("the till's file is late, vendor called");
    expect(await page.locator(".stat", { hasText: "open incidents" }).textContent()).toMatch(/^\s*0\s*open incidents\s*1 acknowledged/);
    await page.goto(`${server.url}/ui/health`);
    expect(await page.locator("tr", { hasText: "Incidents" }).textContent()).toContain("0 incidents open, 1 acknowledged");
    await page.goto(`${server.url}/ui`);

    await page.locator(`li[data-incident="${KEY}"] input[name=reason]`).fill("loaded the file by hand");
    await page.locator(`li[data-incident="${KEY}"] button`, { hasText: "Resolve" }).click();
    await expect.poll(() => page.locator("#flash").textContent()).toMatch(new RegExp(`Resolved ${KEY}; its notifiers are told\\. Audit entry #\\d+ by ${UI_LOCAL_USER}\\.`));
    expect(await page.locator(`li[data-incident="${KEY}"]`).count()).toBe(0);
    expect(await page.locator("#incidents").textContent()).toContain("None.");

    const audit = await h.engine.audit({});
    expect(audit.map((e) => `${e.actor} ${e.action} ${e.reason}`)).toEqual([
      `${UI_LOCAL_USER} incident-resolve loaded the file by hand`, `${UI_LOCAL_USER} incident-acknowledge the till's file is late, vendor called`,
      "watchdog incident-open SLA missed: orders_daily for 2026-09-01 is not published; the deadline was 2026-09-02 06:00 UTC",
    ]);
    expect((await h.store.dueAlerts(h.clock.now(), 10)).map((a) => `${a.event} ${a.notifier}`)).toEqual(["open log", "resolve log"]);

    // The freshness page shows who resolved it and why.
    await page.goto(`${server.url}/ui/freshness`);
    expect(await page.locator("table.t tbody tr", { hasText: "orders_daily" }).first().textContent()).toContain(`by ${UI_LOCAL_USER}: loaded the file by hand`);
    await context.close();
  });
});
