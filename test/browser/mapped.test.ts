import { join, resolve } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../support/chromium.ts";
import { expectedCounts, MAPPED_DATE, MAPPED_NOW, MAPPED_PIPELINE, MAPPED_PLAN, MAPPED_RUN, mappedKey, mappedPipeline, seedMappedRun } from "../support/mapped-seed.ts";
import { ScheduleHarness } from "../support/scheduling.ts";
import { startUiServer } from "../support/ui-server.ts";

/**
 * A run that maps 100,000 items, in a real Chromium: the grid shows the mapped task as one cell
 * counted by state, and its drill-down lists one page of keys at a time (keyset links), filtered
 * by key prefix and by state, so the browser holds a page of rows, never 100,000.
 */
const AXE = resolve(import.meta.dirname, "../../node_modules/axe-core/axe.min.js");
const TASK = "load_file";
const DRILL = `/ui/runs/${MAPPED_RUN}/tasks/${TASK}/instances`;
/** IDEM_UI_SHOTS=1 saves the drill-down's screenshots into docs/ui/ (docs/ui.md shows them), as test/browser/ui.test.ts does. */
const SHOTS = process.env.IDEM_UI_SHOTS === "1" ? resolve(import.meta.dirname, "../../docs/ui") : null;
const shot = async (page: Page, name: string) => {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), animations: "disabled" });
};
/** Far more than one page of rows needs, far fewer than 100,000 rows would make. */
const MAX_ELEMENTS = 3_000;

let browser: Browser;
let h: ScheduleHarness;
let server: { url: string; close(): Promise<void> };

beforeAll(async () => {
  [browser, h] = await Promise.all([launchChromium(), ScheduleHarness.open([mappedPipeline], new Date(MAPPED_NOW).toISOString())]);
  await seedMappedRun(h.engine, h.store, MAPPED_PLAN);
  server = await startUiServer(h.engine);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await h?.close();
});

async function open(path: string, width = 1400): Promise<{ page: Page; close: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width, height: width < 600 ? 844 : 900 }, timezoneId: "UTC", reducedMotion: "reduce" });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  const response = await page.goto(server.url + path);
  expect(response?.status(), `GET ${path}`).toBe(200);
  expect(errors, `script errors on ${path}`).toEqual([]);
  return { page, close: () => context.close() };
}

const elements = (page: Page) => page.evaluate(() => document.getElementsByTagName("*").length);
const keys = (page: Page) => page.locator("table.instances tbody td.key").allTextContents();
const counts = (page: Page) =>
  page.locator(".mapcounts .b").evaluateAll((badges) =>
    Object.fromEntries(badges.map((b) => [[...b.classList].find((c) => c.startsWith("s-"))!.slice(2), Number(b.querySelector("b")!.textContent!.replace(/,/g, ""))])),
  );

describe("a run that maps 100,000 items", () => {
  const expected = expectedCounts(MAPPED_PLAN);
  const total = MAPPED_PLAN.items + MAPPED_PLAN.removed;

  it("shows the mapped task as one grid cell, coloured by its failures, its counts in its label, opening the drill-down", async () => {
    const { page, close } = await open(`/ui/pipelines/${MAPPED_PIPELINE}/grid?days=30&to=${MAPPED_DATE}`);
    const row = page.locator(`tr[data-run="${MAPPED_RUN}"]`);
    // One cell per task, whatever the number of instances.
    expect(await row.locator("td a.c, td span.c").count()).toBe(1 + 3);
    const cell = row.locator("a.c.mapped");
    expect(await cell.count()).toBe(1);
    expect(await cell.getAttribute("class")).toContain("s-failed");
    expect(await cell.getAttribute("aria-label")).toBe(
      `${TASK}: ${total.toLocaleString("en")} mapped instances: 7 failed, 3 up for retry, 20 running, ${expected.queued!.toLocaleString("en")} queued, 120 success, 5 removed`,
    );
    expect(await elements(page)).toBeLessThan(MAX_ELEMENTS);
    await shot(page, "grid-mapped");
    await cell.click();
    await page.waitForURL(`**${DRILL}`);
    expect(await counts(page)).toEqual(expected);
    await close();
  });

  it("lists one page of keys in key order, pages forward with the keyset link, and filters by prefix and by state", async () => {
    const { page, close } = await open(DRILL);
    expect(await counts(page)).toEqual(expected);
    expect(await page.locator("h1").textContent()).toContain(TASK);
    const first = await keys(page);
    expect(first).toEqual(Array.from({ length: 100 }, (_, i) => mappedKey(i)));
    // The page holds one page of rows, not 100,000: the browser has little to lay out.
    expect(await page.locator("table.instances tbody tr").count()).toBe(100);
    expect(await elements(page)).toBeLessThan(MAX_ELEMENTS);
    await shot(page, "mapped-instances");

    await page.locator("a[rel=next]").click();
    await page.waitForURL(/after=file-000099\.csv/);
    expect(await keys(page)).toEqual(Array.from({ length: 100 }, (_, i) => mappedKey(100 + i)));
    expect(await page.locator("a", { hasText: "first page" }).count()).toBe(1);

    // A GET form: the filter is in the URL.
    await page.locator("input[name=prefix]").fill("file-09999");
    await page.locator("button", { hasText: "Filter" }).click();
    await page.waitForURL(/prefix=file-09999/);
    expect(await keys(page)).toEqual(Array.from({ length: 10 }, (_, i) => mappedKey(99_990 + i)));
    expect(await page.locator("a[rel=next]").count()).toBe(0);

    await page.locator("input[name=prefix]").fill("");
    await page.locator("select[name=state]").selectOption("failed");
    await page.locator("button", { hasText: "Filter" }).click();
    await page.waitForURL(/state=failed/);
    const failed = await keys(page);
    expect(failed.length).toBe(MAPPED_PLAN.failed);
    expect(await page.locator("table.instances tbody .b.s-failed").count()).toBe(MAPPED_PLAN.failed);
    expect([...failed].sort()).toEqual(failed);

    // A count is a link to its state's keys; removed keys stay listed with their reason.
    await page.locator(".mapcounts a.s-removed").click();
    await page.waitForURL(/state=removed/);
    expect(await keys(page)).toEqual(Array.from({ length: 5 }, (_, i) => `zz-gone-${i}.csv`));
    expect(await page.locator("table.instances tbody").textContent()).toContain("its key is no longer in the list");
    await close();
  });

  it("opens an instance's why from its row, with the mapped task's keys in its crumbs", async () => {
    const { page, close } = await open(`${DRILL}?state=failed`);
    const key = (await keys(page))[0]!;
    await page.locator("table.instances tbody tr").first().locator("a", { hasText: "why" }).click();
    await page.waitForURL(`**/tasks/${encodeURIComponent(`${TASK}[${key}]`)}#why`);
    expect(await page.locator("#why").textContent()).toContain(`failed after try 1 of 2: DataError: ${key}: a row has no id`);
    expect(await page.locator(".crumbs").textContent()).toContain(`${TASK} instances`);
    await close();
  });

  it("lists the run one row per task, the mapped task with its counts and a link to its keys", async () => {
    const { page, close } = await open(`/ui/runs/${MAPPED_RUN}`);
    const row = page.locator("tr", { has: page.locator(`a.mono`, { hasText: TASK }) });
    expect(await counts(page)).toEqual(expected);
    expect(await row.locator("a", { hasText: "by key" }).getAttribute("href")).toBe(DRILL);
    expect(await page.locator("table.t").first().locator("tbody tr").count()).toBeLessThanOrEqual(3);
    expect(await elements(page)).toBeLessThan(MAX_ELEMENTS);
    await close();
  });

  it("fits a 390 px phone: the drill-down never scrolls the page sideways, and its table scrolls in its panel", async () => {
    const { page, close } = await open(`${DRILL}?after=${mappedKey(500)}`, 390);
    const layout = await page.evaluate(() => ({ scrollWidth: document.scrollingElement!.scrollWidth, innerWidth: window.innerWidth }));
    expect(layout.scrollWidth).toBeLessThanOrEqual(layout.innerWidth);
    expect(await keys(page)).toContain(mappedKey(501));
    await shot(page, "mapped-instances-phone");
    expect(await page.locator("input[name=prefix]").isVisible()).toBe(true);
    await close();
  });

  it("works without its script: the filter is a GET form and the next page a plain link", async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId: "UTC", javaScriptEnabled: false });
    const page = await context.newPage();
    expect((await page.goto(`${server.url}${DRILL}`))?.status()).toBe(200);
    await page.locator("select[name=state]").selectOption("queued");
    await page.locator("input[name=prefix]").fill("file-050");
    await page.locator("button", { hasText: "Filter" }).click();
    await page.waitForURL(/prefix=file-050.*state=queued|state=queued.*prefix=file-050/);
    expect(await keys(page)).toEqual(Array.from({ length: 100 }, (_, i) => mappedKey(50_000 + i)));
    await page.locator("a[rel=next]").click();
    await page.waitForURL(/after=file-050099\.csv/);
    expect(await keys(page)).toEqual(Array.from({ length: 100 }, (_, i) => mappedKey(50_100 + i)));
    await context.close();
  });

  it("has no serious or critical accessibility violation (axe-core) on the drill-down", async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId: "UTC", bypassCSP: true, reducedMotion: "reduce" });
    const page = await context.newPage();
    const found: string[] = [];
    for (const path of [DRILL, `${DRILL}?state=failed`, `/ui/runs/${MAPPED_RUN}`]) {
      expect((await page.goto(server.url + path))?.status(), path).toBe(200);
      await page.addScriptTag({ path: AXE });
      const violations = await page.evaluate(async () => {
        const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
        const result = await axe.run(document, { resultTypes: ["violations"] });
        return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
      });
      found.push(...violations.map((v) => `${path}: ${v}`));
    }
    expect(found).toEqual([]);
    await context.close();
  }, 60_000);
});
