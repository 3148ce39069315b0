import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addDays } from "../../src/core/time/dates.ts";
import { launchChromium } from "../support/chromium.ts";
import {
  FIRST_DATE, FROZEN, LAST_DUE_DATE, LATE_INCIDENT, MISSING_DATE, RESTATED, SHOP, WAREHOUSE, WAREHOUSE_TASKS, failsCheck, retriesPayments, seedStore, type Seeded,
} from "../support/ui-seed.ts";
import { startUiServer, UI_LOCAL_USER } from "../support/ui-server.ts";

/**
 * The web UI in a real Chromium over a seeded year of a 10-task pipeline. One browser, one
 * seeded store and one server for the whole file; each test opens its pages in a fresh context.
 * Every page visited is saved as a screenshot: into docs/ui/ (docs/ui.md shows them) when
 * IDEM_UI_SHOTS=1 asks to refresh them, else into a temporary directory, so that a test run
 * leaves the working tree as it found it.
 */
const REFRESH_DOCS = process.env.IDEM_UI_SHOTS === "1";
const SHOTS = REFRESH_DOCS ? resolve(import.meta.dirname, "../../docs/ui") : mkdtempSync(join(tmpdir(), "idem-ui-shots-"));
const FAILED_DATE = "2026-11-19";
const FAILED_RUN = `${WAREHOUSE}@${FAILED_DATE}`;
/** Another day whose check fails: its log is replaced by a 50,000-line one. */
const BIG_LOG_DATE = "2026-10-13";
const BIG_LOG_DATE_RUN = `${WAREHOUSE}@${BIG_LOG_DATE}`;
const AXE = resolve(import.meta.dirname, "../../node_modules/axe-core/axe.min.js");

let seeded: Seeded;
let server: { url: string; close(): Promise<void> };
let browser: Browser;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  [seeded, browser] = await Promise.all([seedStore(), launchChromium()]);
  server = await startUiServer(seeded.engine);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await seeded?.close();
  if (!REFRESH_DOCS) rmSync(SHOTS, { recursive: true, force: true });
});

async function open(path: string, options: { timezoneId?: string; dark?: boolean; width?: number } = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({
    viewport: { width: options.width ?? 1400, height: options.width && options.width < 600 ? 844 : 900 },
    timezoneId: options.timezoneId ?? "UTC",
    colorScheme: options.dark ? "dark" : "light",
    reducedMotion: "reduce",
  });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  const response = await page.goto(server.url + path);
  expect(response?.status(), `GET ${path}`).toBe(200);
  expect(errors, `script errors on ${path}`).toEqual([]);
  return { context, page };
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), animations: "disabled" });
}

/** The grid's columns: the pipeline's tasks in its (topological) order. */
function taskOrder(): string[] {
  const order = [...seeded.pipelines.find((p) => p.id === WAREHOUSE)!.tasks.keys()];
  expect([...order].sort()).toEqual([...WAREHOUSE_TASKS].sort());
  return order;
}

/** What the seed made of each business date, as the grid must show it: run state, then one state per task. */
function expectedRow(date: string): string[] {
  if (date === LAST_DUE_DATE) {
    const today: Record<string, string> = { extract_orders: "success", extract_customers: "running", extract_payments: "up_for_retry", stage_orders: "success" };
    return ["running", ...taskOrder().map((t) => today[t] ?? "scheduled")];
  }
  if (failsCheck(date)) {
    return ["failed", ...taskOrder().map((t) => (t === "check_facts" ? "failed" : t === "publish_marts" || t === "export_report" ? "upstream_failed" : "success"))];
  }
  return ["success", ...taskOrder().map(() => "success")];
}

describe("the web UI in Chromium", () => {
  it("shows every cell of a year x 10 tasks in the state the store holds", async () => {
    const { context, page } = await open(`/ui/pipelines/${WAREHOUSE}/grid?days=365&to=${LAST_DUE_DATE}`);
    const tasks = await page.$$eval("table.grid thead th.tk span", (spans) => spans.map((s) => s.textContent));
    expect(tasks).toEqual(["run", ...taskOrder()]);
    const rows = await page.$$eval("table.grid tbody tr:not(.mh)", (trs) =>
      trs.map((tr) => ({
        date: (tr.querySelector("th a, th .date")?.textContent ?? "").trim(),
        cells: [...tr.querySelectorAll("td > .c")].map((c) => /\bs-([a-z_]+)/.exec(c.getAttribute("class") ?? "")?.[1] ?? "?"),
      })),
    );
    expect(rows).toHaveLength(365);
    expect(rows[0]!.date).toBe(LAST_DUE_DATE);
    expect(rows.at(-1)!.date).toBe(FIRST_DATE);
    for (const row of rows) {
      if (row.date === MISSING_DATE) expect(row.cells, row.date).toEqual(["missing"]);
      else expect(row.cells, row.date).toEqual(expectedRow(row.date));
    }
    // Retried task instances are marked (a dot, the try in the label), and only they.
    const marked = await page.$$eval("table.grid a.c.retried", (cells) => cells.map((c) => [c.closest("tr")!.getAttribute("data-date"), c.getAttribute("aria-label")]));
    expect(marked).toEqual(rows.filter((r) => retriesPayments(r.date) && r.date !== LAST_DUE_DATE).map((r) => [r.date, "extract_payments: success (try 2)"]));
    expect(marked.length).toBeGreaterThan(20);
    // A retried task ends green, and its page keeps both tries.
    const retried = rows.find((r) => retriesPayments(r.date) && r.date !== LAST_DUE_DATE)!;
    expect(retried.cells[1 + taskOrder().indexOf("extract_payments")]).toBe("success");
    await shot(page, "grid");
    await page.click(`tr[data-run="${WAREHOUSE}@${retried.date}"] td:nth-child(${3 + taskOrder().indexOf("extract_payments")}) a`);
    await page.waitForURL(/\/tasks\/extract_payments$/);
    expect(await page.$$eval("table.t tbody tr", (trs) => trs.map((tr) => tr.querySelector("td")?.textContent?.trim()))).toEqual(["try 1", "try 2"]);
    await context.close();
  });

  it("restores the view of a cell's deep link in a new context, with the failed task's log readable", async () => {
    const first = await open(`/ui/pipelines/${WAREHOUSE}/grid?days=30&to=${LAST_DUE_DATE}&only=failed`);
    expect(await first.page.$$eval("table.grid tbody tr[data-run]", (trs) => trs.map((tr) => tr.getAttribute("data-run")))).toEqual([FAILED_RUN]);
    await first.page.click(`tr[data-run="${FAILED_RUN}"] td:nth-child(${3 + taskOrder().indexOf("check_facts")}) a`);
    await first.page.waitForURL(/\/tasks\/check_facts/);
    const link = first.page.url();
    const seen = await first.page.textContent("main");
    await first.context.close();

    const second = await open(new URL(link).pathname + new URL(link).search);
    expect(await second.page.textContent("h1")).toContain("check_facts");
    expect(await second.page.textContent("h1 .b")).toBe("failed");
    expect(await second.page.textContent("main")).toBe(seen);
    const log = await second.page.textContent("pre.log");
    expect(log).toContain(`DataError: ${FAILED_DATE}: fact_sales has 1204 rows but the source orders sum to 1198 (6 duplicates)`);
    await shot(second.page, "task-instance");
    await second.page.goto(server.url + `/ui/runs/${FAILED_RUN}`);
    await shot(second.page, "run");
    await second.context.close();
  });

  it("previews a backfill over a frozen period: every date listed, the frozen ones refused and struck out with the owner and reason", async () => {
    const { context, page } = await open("/ui/backfills");
    await page.selectOption("select[name=pipeline]", WAREHOUSE);
    await page.fill("input[name=from]", "2026-05-28");
    await page.fill("input[name=to]", "2026-06-03");
    await page.selectOption("select[name=reprocess]", "all");
    await page.click("text=Preview plan");
    await page.waitForURL(/\/ui\/backfills\/new\?/);
    const items = await page.$$eval("table.t tbody tr", (trs) =>
      trs.map((tr) => ({
        date: tr.querySelector("td")?.textContent?.trim(),
        action: tr.querySelector(".b")?.textContent?.trim(),
        struck: tr.querySelector("td")?.classList.contains("strike"),
        why: tr.querySelectorAll("td")[2]?.textContent?.trim(),
      })),
    );
    expect(items.map((i) => i.date)).toEqual(["2026-05-28", "2026-05-29", "2026-05-30", "2026-05-31", "2026-06-01", "2026-06-02", "2026-06-03"]);
    for (const item of items) {
      const frozen = item.date! >= FROZEN.from;
      expect(item.action, item.date).toBe(frozen ? "refused" : "rerun");
      expect(item.struck, item.date).toBe(frozen);
      if (frozen) expect(item.why).toBe(`frozen ${FROZEN.from}..${FROZEN.to} by ${FROZEN.owner}: ${FROZEN.reason}`);
    }
    expect(await page.textContent("main")).toContain("estimate p50");
    await shot(page, "backfill-preview");
    // Nothing was created by previewing; confirming with a reason creates it, refused dates and all.
    expect(await seeded.engine.backfills()).toEqual([]);
    await page.fill("form[action='/ui/backfills'] input[name=reason]", "restate May after the currency fix");
    await page.click("text=Create backfill: 4 runs");
    await page.waitForURL(/\/ui\/backfills\/bf_/);
    const perDate = await page.$$eval("table.t tbody tr", (trs) => trs.map((tr) => tr.querySelector(".b")?.textContent?.trim()));
    expect(perDate).toEqual(["rerun", "rerun", "rerun", "rerun", "refused", "refused", "refused"]);
    expect(await page.textContent("main")).toContain("restate May after the currency fix");
    await shot(page, "backfill");
    const [created] = await seeded.engine.backfills();
    expect(created).toMatchObject({ actor: UI_LOCAL_USER, reason: "restate May after the currency fix", fromDate: "2026-05-28", toDate: "2026-06-03" });
    await context.close();
  });

  it("shows the missing day in the ledger calendar with its reason", async () => {
    const { context, page } = await open(`/ui/pipelines/${WAREHOUSE}/ledger?month=2026-10`);
    const day = page.locator(`.day[data-date="${MISSING_DATE}"]`);
    expect(await day.getAttribute("class")).toContain("s-missing");
    expect(await day.getAttribute("title")).toContain("missing (passed over by the scheduler without a run");
    expect(await day.locator(".vh").textContent()).toBe(await day.getAttribute("title"));
    const rows = await page.$$eval("table.t tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent?.trim())));
    const missing = rows.find((r) => r[0] === MISSING_DATE)!;
    expect(missing.slice(1, 3)).toEqual(["missing", "passed over by the scheduler without a run (was the schedule or start changed?)"]);
    await shot(page, "ledger");
    await page.goto(server.url + "/ui");
    await shot(page, "on-call");
    await context.close();
  });

  it("names the failing task and the first line of its error on the on-call page", async () => {
    const { context, page } = await open("/ui");
    const row = page.locator("table.t tbody tr", { hasText: FAILED_DATE });
    expect((await row.locator("td").nth(3).textContent())?.trim()).toBe(`check_facts DataError: ${FAILED_DATE}: fact_sales has 1204 rows but the source orders sum to 1198 (6 duplicates)`);
    await row.locator("a", { hasText: "check_facts" }).click();
    await page.waitForURL(/\/tasks\/check_facts\?try=1$/);
    await context.close();
  });

  it("marks restated business dates in the grid with a glyph, a count and a title, and lists each restatement on the run page", async () => {
    const { context, page } = await open(`/ui/pipelines/${SHOP}/grid?days=30&to=${LAST_DUE_DATE}`);
    const rows = await page.$$eval("table.grid tbody tr[data-run]", (trs) =>
      trs.map((tr) => {
        const marker = tr.querySelector("th .rst");
        return { runId: tr.getAttribute("data-run")!, text: marker?.textContent ?? null, title: marker?.getAttribute("title") ?? null };
      }),
    );
    expect(rows).toHaveLength(29);
    // The last restatement of each came after 2026-11-29 ran (02:00 in New York, 07:00 UTC), 10 minutes later.
    const restated = Object.fromEntries(Object.entries(RESTATED).map(([date, times]) => [`${SHOP}@${date}`, [`↻${times}`, `restated ${times === 1 ? "once" : `${times} times`}, last at 2026-11-30 07:10 UTC`]]));
    for (const row of rows) expect([row.runId, row.text, row.title]).toEqual([row.runId, ...(restated[row.runId] ?? [null, null])]);
    expect(await page.textContent(".toolbar.counts")).toContain("↻ restated 3");
    await shot(page, "grid-restated");
    // The time in a marker's title follows the page's zone like any timestamp; the business date does not move.
    const marker = page.locator(`tr[data-run="${SHOP}@2026-11-26"] th .rst`);
    await page.selectOption("#tz", "Asia/Tokyo");
    expect([await marker.getAttribute("title"), await marker.getAttribute("aria-label")]).toEqual(["restated 3 times, last at 2026-11-30 16:10 GMT+9", "restated 3 times, last at 2026-11-30 16:10 GMT+9"]);
    expect(await page.textContent(`tr[data-run="${SHOP}@2026-11-26"] th a`)).toBe("2026-11-26");
    await page.selectOption("#tz", "");
    expect(await marker.getAttribute("title")).toBe("restated 3 times, last at 2026-11-30 07:10 UTC");

    await page.click(`tr[data-run="${SHOP}@2026-11-26"] th a`);
    await page.waitForURL(/\/ui\/runs\//);
    const history = await page.$$eval("#restatements tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].slice(1).map((td) => td.textContent?.replace(/\s+/g, " ").trim())));
    expect(history).toEqual([3, 2, 1].map((n) => [`↻${n} restated after 2026-11-${26 + n} ran`, `restating the last 3 interval(s) after 2026-11-${26 + n} ran`, "all"]));
    expect(await page.textContent("dl.kv")).toMatch(/Restated\s*↻3 3 times, last at/);
    await shot(page, "run-restated");
    await page.goto(server.url + `/ui/pipelines/${SHOP}/ledger?month=2026-11`);
    expect(await page.locator(`.day[data-date="2026-11-26"] .vh`).textContent()).toBe("2026-11-26: ran: success · restated 3 times, last at 2026-11-30 07:10 UTC");
    expect(await page.locator(`.day[data-date="2026-11-25"] .vh`).textContent()).not.toContain("restated");
    await page.selectOption("#tz", "Asia/Tokyo");
    expect(await page.locator(`.day[data-date="2026-11-26"]`).getAttribute("title")).toBe("2026-11-26: ran: success · restated 3 times, last at 2026-11-30 16:10 GMT+9");
    expect(await page.locator(`.day[data-date="2026-11-26"] .vh`).textContent()).toBe("2026-11-26: ran: success · restated 3 times, last at 2026-11-30 16:10 GMT+9");
    await context.close();
  });

  it("lists the alerts an incident sent on the freshness page: notifier, kind, state, tries, last error; filtered by incident and state in the URL", async () => {
    const { context, page } = await open("/ui/freshness");
    const alertRows = () => page.$$eval("#alerts tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent?.replace(/\s+/g, " ").trim())));
    const incidentRow = page.locator("table.t tbody tr", { hasText: LATE_INCIDENT.date }).filter({ hasText: "published at last" });
    await incidentRow.locator("a", { hasText: "ops_webhook, log" }).click();
    await page.waitForURL(/incident=/);
    const all = await alertRows();
    expect(all.map((r) => [r[1], r[2], r[4], r[5], r[7]])).toEqual([
      ["log", "resolve", "sent", "1", ""],
      ["ops_webhook", "resolve", "failed", "1", LATE_INCIDENT.error],
      ["log", "open", "sent", "1", ""],
      ["ops_webhook", "open", "failed", "1", LATE_INCIDENT.error],
    ]);
    expect(all[1]![6]).toMatch(/^next try 2026-11-30 14:10 UTC$/);
    await page.click("#alerts .seg a:text-is('failed')");
    await page.waitForURL(/alerts=failed/);
    const url = page.url();
    await context.close();
    const again = await open(new URL(url).pathname + new URL(url).search);
    const failed = await again.page.$$eval("#alerts tbody tr", (trs) => trs.map((tr) => tr.querySelectorAll("td")[1]?.textContent?.trim()));
    expect(failed).toEqual(["ops_webhook", "ops_webhook"]);
    await again.page.locator("#alerts").screenshot({ path: join(SHOTS, "freshness-alerts.png"), animations: "disabled" });
    await again.context.close();
  });

  it("moves timestamps with the zone selector but never a business date", async () => {
    const { context, page } = await open(`/ui/runs/${FAILED_RUN}`, { timezoneId: "UTC" });
    const read = () => page.$$eval("main", ([main]) => ({
      times: [...main!.querySelectorAll("time")].map((t) => t.textContent),
      dates: [...main!.querySelectorAll(".date")].map((d) => d.textContent),
    }));
    const before = await read();
    expect(before.times[0]).toMatch(/ UTC$/);
    // The why panel's sentences name instants too: they move with the page's zone, not the server's.
    const whyTimes = () => page.$$eval(".why time", (ts) => ts.map((t) => t.textContent));
    expect(await whyTimes()).toEqual([expect.stringMatching(/ UTC$/)]);
    expect(before.dates).toContain(FAILED_DATE);
    await page.selectOption("#tz", "Asia/Tokyo");
    const after = await read();
    expect(await whyTimes()).toEqual([expect.stringMatching(/ GMT\+9$/)]);
    expect(after.dates).toEqual(before.dates);
    expect(after.times).not.toEqual(before.times);
    expect(after.times[0]).toMatch(/ GMT\+9$/);
    // The interval starts at local midnight in London: 00:00 UTC in winter, 09:00 in Tokyo.
    expect(before.times).toContain("2026-11-19 00:00 UTC");
    expect(after.times).toContain("2026-11-19 09:00 GMT+9");
    // The chosen zone is part of the URL: a new context with another browser zone shows the same.
    const url = page.url();
    expect(url).toContain("tz=Asia%2FTokyo");
    await context.close();
    const again = await open(new URL(url).pathname + new URL(url).search, { timezoneId: "America/Los_Angeles" });
    expect((await again.page.$$eval("main time", (ts) => ts.map((t) => t.textContent)))).toEqual(after.times);
    await again.context.close();
  });

  it("refuses to clear a task without a reason, then clears it and shows the entry with its actor in the audit page", async () => {
    const { context, page } = await open(`/ui/runs/${FAILED_RUN}/tasks/check_facts`);
    const form = page.locator("form[action$='/clear']");
    await form.locator("button[type=submit]").click();
    expect(await form.locator("input[name=reason]").evaluate((input: HTMLInputElement) => input.validity.valueMissing)).toBe(true);
    expect(page.url()).toContain("/tasks/check_facts");
    // Past the browser's check, the server refuses too, and nothing changes.
    await form.locator("input[name=reason]").evaluate((input: HTMLInputElement) => input.removeAttribute("required"));
    await form.locator("button[type=submit]").click();
    await page.waitForSelector("#flash.bad");
    expect(await page.textContent("#flash")).toContain("Refused: a reason is required");
    expect(await page.textContent("h1 .b")).toBe("failed");
    expect((await seeded.engine.audit({ pipelineId: WAREHOUSE })).filter((e) => e.action === "clear")).toEqual([]);

    await form.locator("input[name=reason]").fill("dedup fixed upstream, rerun the check");
    await form.locator("button[type=submit]").click();
    await page.waitForSelector("#flash.good");
    expect(await page.textContent("#flash")).toMatch(new RegExp(`Audit entry #\\d+ by ${UI_LOCAL_USER}`));
    // Told once: the URL carries no message, and a reload (or the link, shared) does not say it again.
    expect(new URL(page.url()).search).toBe("");
    await page.reload();
    expect(await page.locator("#flash").count()).toBe(0);
    expect(await page.textContent("h1 .b")).not.toBe("failed");

    await page.goto(server.url + `/ui/audit?action=clear&pipeline=${WAREHOUSE}`);
    const entries = await page.$$eval("table.audit tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent?.trim())));
    expect(entries).toHaveLength(1);
    expect(entries[0]!.slice(1, 6)).toEqual([UI_LOCAL_USER, "clear", WAREHOUSE, `${FAILED_RUN} check_facts`, "dedup fixed upstream, rerun the check"]);
    const byActor = async (actor: string) => {
      await page.goto(server.url + `/ui/audit?actor=${actor}`);
      return page.$$eval("table.audit tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].slice(1, 3).map((td) => td.textContent?.trim())));
    };
    expect(await byActor(UI_LOCAL_USER)).toEqual([[UI_LOCAL_USER, "clear"], [UI_LOCAL_USER, "backfill"]]);
    expect(await byActor("carol")).toEqual([["carol", "unpause"], ["carol", "pause"]]);
    await page.goto(server.url + "/ui/audit");
    await shot(page, "audit");
    await context.close();
  });

  it("recolours a cell without a reload when its task instance changes through the API", async () => {
    const run = `${WAREHOUSE}@${LAST_DUE_DATE}`;
    const { context, page } = await open(`/ui/pipelines/${WAREHOUSE}/grid?days=30&to=${LAST_DUE_DATE}`);
    await page.waitForSelector("#live.on");
    await page.evaluate(() => ((window as unknown as { stillThisPage: boolean }).stillThisPage = true));
    const cell = page.locator(`tr[data-run="${run}"] td:nth-child(${3 + taskOrder().indexOf("export_report")}) > .c`);
    expect(await cell.getAttribute("class")).toContain("s-scheduled");
    // Another client (curl, a script) acts through the API as the local user, with the page's CSRF token.
    const csrf = await page.inputValue("input[name=_csrf] >> nth=0");
    const response = await fetch(`${server.url}/api/v1/runs/${run}/tasks/export_report/skip`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-csrf-token": csrf },
      body: JSON.stringify({ reason: "no report on the day of the migration" }),
    });
    expect(response.status, await response.clone().text()).toBe(200);
    await expect.poll(() => cell.getAttribute("class"), { timeout: 10_000 }).toContain("s-skipped");
    expect(await cell.getAttribute("aria-label")).toBe("export_report: skipped");
    expect(await page.evaluate(() => (window as unknown as { stillThisPage?: boolean }).stillThisPage)).toBe(true);
    await context.close();
  });

  it("says a failed day is frozen (owner, reason) and clears it with a reason for opening the frozen period, audited", async () => {
    const date = [...Array(30).keys()].map((i) => addDays(FROZEN.from, i)).find(failsCheck)!;
    const runId = `${WAREHOUSE}@${date}`;
    const { context, page } = await open(`/ui/runs/${runId}`);
    expect(await page.textContent("#frozen")).toContain(`${date} is frozen: ${FROZEN.from}..${FROZEN.to} by ${FROZEN.owner}: ${FROZEN.reason}`);
    expect(await page.textContent("dl.kv")).toContain(`Frozen${FROZEN.from}..${FROZEN.to} by ${FROZEN.owner}`);
    const form = page.locator("form[action$='/clear']").first();
    await form.locator("input[name=reason]").fill("duplicates removed at the source");
    // The engine refuses a frozen date without the way out; past the browser's check, the page says what to give.
    await form.locator("input[name=openFrozen]").evaluate((input: HTMLInputElement) => input.removeAttribute("required"));
    await form.locator("button[type=submit]").click();
    await page.waitForSelector("#flash.bad");
    expect(await page.textContent("#flash")).toContain(`Refused: pipeline ${WAREHOUSE}: ${date} is frozen ${FROZEN.from}..${FROZEN.to} by ${FROZEN.owner}: ${FROZEN.reason}; give a reason for opening the frozen period to run it anyway`);
    expect(await page.textContent("h1 .b")).toBe("failed");
    await page.locator("form[action$='/clear'] input[name=reason]").first().fill("duplicates removed at the source");
    await page.locator("form[action$='/clear'] input[name=openFrozen]").first().fill("finance agreed on the phone (ticket FIN-311)");
    await page.locator("form[action$='/clear'] button[type=submit]").first().click();
    await page.waitForSelector("#flash.good");
    expect(await page.textContent("h1 .b")).not.toBe("failed");
    const [entry] = (await seeded.engine.audit({ pipelineId: WAREHOUSE })).filter((e) => e.action === "clear" && e.runId === runId);
    expect(entry).toMatchObject({ actor: UI_LOCAL_USER, reason: "duplicates removed at the source", details: { openFrozen: "finance agreed on the phone (ticket FIN-311)", failedOnly: true } });
    await context.close();
  });

  it("opens a long task log at its end, and searches the whole log on the server with the query in the URL", async () => {
    const runId = `${WAREHOUSE}@${BIG_LOG_DATE}`;
    const [attempt] = await seeded.engine.attempts(runId, "check_facts");
    const error = `DataError: ${BIG_LOG_DATE}: fact_sales has 1204 rows but the source orders sum to 1198 (6 duplicates)`;
    writeFileSync(attempt!.logPath, [...Array(50_000).keys()].map((i) => `2026-10-14T02:00:00Z checked batch ${i + 1} of 50000`).join("\n") + `\n${error}\n`);
    for (const width of [390, 1400]) {
      const { context, page } = await open(`/ui/runs/${runId}/tasks/check_facts`, { width });
      const log = page.locator("pre.log");
      await log.scrollIntoViewIfNeeded();
      // The last line (the error) is in the log's visible box without any scrolling by the reader.
      const seen = await log.evaluate((pre) => ({ atEnd: pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 2, scrolled: pre.scrollTop > 0 }));
      expect(seen).toEqual({ atEnd: true, scrolled: true });
      await page.fill("input[name=q]", "BATCH 1234 of");
      await page.click("form.logsearch button[type=submit]");
      await page.waitForURL(/[?&]q=BATCH\+1234\+of/);
      expect(await page.textContent(".hits p")).toContain("1 of 50,001 lines contain “BATCH 1234 of”");
      await page.click(".hitlist a:text-is('line 1,234')");
      await page.waitForURL(/offset=\d+.*q=/);
      const url = page.url();
      await context.close();
      // A shared link shows the same place: the hit marked, in the log's visible box.
      const again = await open(new URL(url).pathname + new URL(url).search, { width });
      const mark = again.page.locator("pre.log mark").first();
      expect(await mark.textContent()).toBe("batch 1234 of");
      const inView = await again.page.locator("pre.log").evaluate((pre) => {
        const m = pre.querySelector("mark")!.getBoundingClientRect();
        const box = pre.getBoundingClientRect();
        return m.top >= box.top && m.bottom <= box.bottom;
      });
      expect(inView).toBe(true);
      if (width === 390) await shot(again.page, "task-log-search-phone");
      await again.context.close();
    }
  });

  for (const width of [390, 1400]) {
    it(`works at ${width} px wide: no page scrolls sideways, wide tables scroll in their panel, every navigation link is on screen`, async () => {
      const paths = [
        "/ui",
        `/ui/runs/${FAILED_RUN}`,
        `/ui/runs/${FAILED_RUN}/tasks/check_facts`,
        `/ui/backfills/new?pipeline=${WAREHOUSE}&from=2026-05-28&to=2026-06-03&reprocess=all`,
        `/ui/pipelines/${WAREHOUSE}/grid?days=30&to=${LAST_DUE_DATE}`,
        `/ui/pipelines/${WAREHOUSE}/ledger?month=2026-10`,
        `/ui/pipelines/${WAREHOUSE}/graph`,
        "/ui/pipelines", "/ui/backfills", "/ui/freshness", "/ui/datasets", "/ui/pools", "/ui/workers", "/ui/health", "/ui/audit",
      ];
      const { context, page } = await open(paths[0]!, { width });
      for (const path of paths) {
        expect((await page.goto(server.url + path))?.status(), path).toBe(200);
        const layout = await page.evaluate(() => ({
          scrollWidth: document.scrollingElement!.scrollWidth,
          innerWidth,
          // What sticks out, named so a failure says where to look.
          wide: [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > innerWidth + 1 && !e.closest("[class*=flush], .gridwrap, pre"))
            .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.getAttribute("class") ?? ""}`),
          nav: [...document.querySelectorAll(".nav a")].map((a) => {
            const box = a.getBoundingClientRect();
            return { text: a.textContent, visible: box.width > 0 && box.left >= 0 && box.right <= innerWidth };
          }),
          // A table wider than its panel: the panel is what scrolls, sideways.
          tables: [...document.querySelectorAll("table.t, table.grid")].map((t) => {
            const box = t.parentElement!;
            return { wider: t.scrollWidth > box.clientWidth + 1, scrolls: getComputedStyle(box).overflowX === "auto" && box.scrollWidth > box.clientWidth };
          }),
        }));
        expect(layout.scrollWidth, `${path} at ${width} px: ${layout.wide.join(", ")}`).toBeLessThanOrEqual(layout.innerWidth);
        expect(layout.nav.map((n) => n.text)).toEqual(["On call", "Pipelines", "Backfills", "Freshness", "Datasets", "Pools", "Workers", "Health", "Audit"]);
        expect(layout.nav.filter((n) => !n.visible), path).toEqual([]);
        for (const t of layout.tables) if (t.wider) expect(t.scrolls, path).toBe(true);
      }
      if (width === 390) {
        await page.goto(server.url + `/ui/runs/${FAILED_RUN}`);
        await shot(page, "run-phone");
        await page.goto(server.url + "/ui");
        await shot(page, "on-call-phone");
      }
      await context.close();
    });
  }

  it("adds the row of a run created while the grid is open, with no reload", async () => {
    const { context, page } = await open(`/ui/pipelines/${WAREHOUSE}/grid?days=90&to=${LAST_DUE_DATE}`);
    await page.waitForSelector("#live.on");
    await page.evaluate(() => ((window as unknown as { stillThisPage: boolean }).stillThisPage = true));
    const rowsOf = (date: string) => page.$$eval(`table.grid tr[data-date="${date}"]`, (trs) => trs.map((tr) => ({ run: tr.getAttribute("data-run"), cells: [...tr.querySelectorAll("td > .c")].map((c) => /\bs-([a-z_]+)/.exec(c.getAttribute("class") ?? "")?.[1]) })));
    expect(await rowsOf(MISSING_DATE)).toEqual([{ run: null, cells: ["missing"] }]);
    // Another client runs the day the scheduler passed over (as a backfill would: a new run).
    await seeded.engine.trigger(WAREHOUSE, MISSING_DATE, { actor: "bob", reason: "the passed-over day" });
    await expect.poll(() => rowsOf(MISSING_DATE), { timeout: 10_000 }).toEqual([{ run: `${WAREHOUSE}@${MISSING_DATE}`, cells: ["queued", ...taskOrder().map((t) => (["extract_orders", "extract_customers", "extract_payments"].includes(t) ? "queued" : "scheduled"))] }]);
    // In its place, between its neighbours: newest first.
    const order = await page.$$eval("table.grid tr[data-date]", (trs) => trs.map((tr) => tr.getAttribute("data-date")!));
    expect(order).toEqual([...order].sort().reverse());
    expect(await page.evaluate(() => (window as unknown as { stillThisPage?: boolean }).stillThisPage)).toBe(true);
    await context.close();
  });

  it("says when a grid ends before today and how many newer dates failed or are missing, with a link to the latest", async () => {
    const to = "2026-10-10";
    const newer = (await seeded.engine.expected(WAREHOUSE, { from: addDays(to, 1), to: "2026-12-01" })).filter((e) => e.status === "failed" || e.status === "missing");
    expect(newer.length).toBeGreaterThan(0);
    const { context, page } = await open(`/ui/pipelines/${WAREHOUSE}/grid?days=30&to=${to}&only=failed`);
    expect((await page.textContent("#newer"))?.replace(/\s+/g, " ").trim()).toBe(
      `This view ends at ${to}; ${newer.length} newer date${newer.length === 1 ? "" : "s"} failed or ${newer.length === 1 ? "is" : "are"} missing after it (up to 2026-11-30). Show the latest`,
    );
    await page.click("#newer a");
    await page.waitForURL(/grid\?days=30&only=failed$/);
    expect(await page.locator("#newer").count()).toBe(0);
    await context.close();
  });

  it("reads the audit log's days in the zone the page shows, and shows its times in that zone", async () => {
    // 14:00 UTC on 30 November is 04:00 on 1 December in Kiritimati (UTC+14).
    const { context, page } = await open("/ui/audit", { timezoneId: "Pacific/Kiritimati" });
    await page.fill("input[name=from]", "2026-12-01");
    await page.fill("input[name=to]", "2026-12-01");
    await page.click("form[data-zoned] button[type=submit]");
    await page.waitForURL(/tz=Pacific%2FKiritimati/);
    const rows = () => page.$$eval("table.audit tbody tr", (trs) => trs.map((tr) => [tr.querySelector("time")?.textContent, tr.querySelectorAll("td")[1]?.textContent?.trim(), tr.querySelectorAll("td")[2]?.textContent?.trim()]));
    const seen = await rows();
    expect(seen).toContainEqual(["2026-12-01 04:00:00 GMT+14", "carol", "unpause"]);
    for (const [time] of seen) expect(time).toMatch(/^2026-12-01 .* GMT\+14$/);
    await context.close();
    // A link with days and no zone was read in UTC: the page shows UTC too, whatever the browser's zone.
    const shared = await open("/ui/audit?from=2026-11-30&to=2026-11-30&actor=carol", { timezoneId: "Pacific/Kiritimati" });
    expect(await shared.page.$$eval("table.audit tbody tr time", (ts) => ts.map((t) => t.textContent))).toEqual(["2026-11-30 14:00:00 UTC", "2026-11-30 14:00:00 UTC"]);
    expect(await shared.page.inputValue("#tz")).toBe("UTC");
    await shared.context.close();
  });

  for (const scheme of ["light", "dark"] as const) {
  it(`has no serious or critical accessibility violation (axe-core) on any page, ${scheme}`, async () => {
    const paths = [
      "/ui", "/ui/pipelines", `/ui/pipelines/${WAREHOUSE}/grid?days=30&to=${LAST_DUE_DATE}`, `/ui/pipelines/${WAREHOUSE}/graph`,
      `/ui/pipelines/${WAREHOUSE}/ledger?month=2026-10`, `/ui/runs/${FAILED_RUN}`, `/ui/runs/${FAILED_RUN}/tasks/check_facts?q=rows`,
      `/ui/runs/${WAREHOUSE}@2026-06-24`, "/ui/backfills", `/ui/backfills/new?pipeline=${WAREHOUSE}&from=2026-05-28&to=2026-06-03&reprocess=all`,
      "/ui/freshness", "/ui/datasets", "/ui/pools", "/ui/workers", "/ui/health", "/ui/audit", "/ui/login",
    ];
    // axe is injected as a script of the test, which the pages' policy (scripts from idem only) would refuse.
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId: "UTC", bypassCSP: true, reducedMotion: "reduce" });
    const page = await context.newPage();
    const found: string[] = [];
    await page.emulateMedia({ colorScheme: scheme });
    {
      for (const path of paths) {
        expect((await page.goto(server.url + path))?.status(), path).toBe(200);
        await page.addScriptTag({ path: AXE });
        const violations = await page.evaluate(async () => {
          const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
          const result = await axe.run(document, { resultTypes: ["violations"] });
          return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
        });
        found.push(...violations.map((v) => `${scheme} ${path}: ${v}`));
      }
    }
    expect(found).toEqual([]);
    await context.close();
  }, 180_000);
  }

  it("lets the keyboard alone reach the main actions: skip to content, the navigation, the clear form, the log search", async () => {
    const { context, page } = await open(`/ui/runs/${BIG_LOG_DATE_RUN}/tasks/check_facts`);
    const focused = () => page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      return { tag: el.tagName.toLowerCase(), name: el.getAttribute("name"), text: (el.textContent ?? "").trim().slice(0, 40), outlined: getComputedStyle(el).outlineStyle !== "none" };
    });
    await page.keyboard.press("Tab");
    expect(await focused()).toMatchObject({ tag: "a", text: "Skip to content", outlined: true });
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    expect(await focused()).toMatchObject({ tag: "a", text: "On call", outlined: true });
    // Tab on until each main action has had the focus, as a person without a mouse does.
    const reached = new Set<string>();
    for (let i = 0; i < 120 && !(reached.has("q") && reached.has("reason") && reached.has("Clear task")); i++) {
      await page.keyboard.press("Tab");
      const f = await focused();
      expect(f.outlined, `${f.tag} ${f.name ?? f.text}`).toBe(true);
      reached.add(f.name ?? f.text);
    }
    expect([...reached]).toEqual(expect.arrayContaining(["q", "reason", "Clear task"]));
    // The search runs from the keyboard too.
    await page.focus("input[name=q]");
    await page.keyboard.type("DataError");
    await page.keyboard.press("Enter");
    await page.waitForURL(/q=DataError/);
    expect(await page.textContent(".hits p")).toMatch(/^1 of [\d,]+ lines contain “DataError”/);
    // Skip to content moves the focus past the header.
    await page.goto(server.url + "/ui");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => !!document.activeElement?.closest("main"))).toBe(true);
    await context.close();
  });

  it("serves each page with one stylesheet and one script of its own, nothing inline, under a policy that allows nothing else", async () => {
    const { context, page } = await open("/ui");
    const violations: string[] = [];
    page.on("console", (message) => { if (/Content Security Policy/i.test(message.text())) violations.push(message.text()); });
    for (const path of ["/ui", `/ui/pipelines/${WAREHOUSE}/grid?days=30&to=${LAST_DUE_DATE}`, `/ui/runs/${FAILED_RUN}`, `/ui/runs/${FAILED_RUN}/tasks/check_facts?q=rows`, "/ui/audit", "/ui/backfills"]) {
      const response = await page.goto(server.url + path);
      expect(response?.headers()["content-security-policy"], path).toMatch(/script-src 'self'; style-src 'self'/);
      const parts = await page.evaluate(() => ({
        stylesheets: [...document.querySelectorAll("link[rel=stylesheet]")].map((l) => new URL((l as HTMLLinkElement).href).pathname),
        scripts: [...document.scripts].map((s) => (s.src ? new URL(s.src).pathname : "inline")),
        inlineStyles: document.querySelectorAll("style, [style]").length,
        handlers: [...document.querySelectorAll("*")].filter((e) => [...e.attributes].some((a) => a.name.startsWith("on"))).length,
      }));
      expect(parts.stylesheets, path).toEqual([expect.stringMatching(/^\/ui\/assets\/idem\.[0-9a-f]{10}\.css$/)]);
      expect(parts.scripts, path).toEqual([expect.stringMatching(/^\/ui\/assets\/idem\.[0-9a-f]{10}\.js$/)]);
      expect([parts.inlineStyles, parts.handlers], path).toEqual([0, 0]);
    }
    expect(violations).toEqual([]);
    await context.close();
  });

  it("renders every other page without a script error", async () => {
    const pages: [string, string][] = [
      ["/ui/pipelines", "pipelines"],
      [`/ui/pipelines/${WAREHOUSE}/graph?run=${WAREHOUSE}@${LAST_DUE_DATE}`, "graph"],
      ["/ui/backfills", "backfills"],
      ["/ui/freshness", "freshness"],
      ["/ui/datasets", "datasets"],
      ["/ui/pools", "pools"],
      ["/ui/workers", "workers"],
      ["/ui/health", "health"],
    ];
    const { context, page } = await open("/ui/pipelines");
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    for (const [path, name] of pages) {
      expect((await page.goto(server.url + path))?.status(), path).toBe(200);
      expect(await page.textContent("h1")).toBeTruthy();
      await shot(page, name);
    }
    expect(errors).toEqual([]);
    await context.close();
    const dark = await open(`/ui/pipelines/${WAREHOUSE}/grid?to=${addDays(LAST_DUE_DATE, 0)}`, { dark: true });
    expect(await dark.page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)).toBe("rgb(14, 16, 20)");
    await shot(dark.page, "grid-dark");
    await dark.context.close();
  });
});
