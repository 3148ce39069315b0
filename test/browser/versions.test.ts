import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../support/chromium.ts";
import { deployedTwice } from "../support/deployed-twice.ts";
import { startUiServer, UI_LOCAL_USER } from "../support/ui-server.ts";

/** Screenshots go to docs/ui/ with IDEM_UI_SHOTS=1 (docs/ui.md shows them), else to a temporary directory. */
const SHOTS = process.env.IDEM_UI_SHOTS === "1" ? resolve(import.meta.dirname, "../../docs/ui") : mkdtempSync(join(tmpdir(), "idem-ui-shots-"));
const AXE = resolve(import.meta.dirname, "../../node_modules/axe-core/axe.min.js");
const OLD_RUN = "pinned@2026-09-01";

let browser: Browser;
const cleanups: (() => Promise<void> | void)[] = [];
beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), animations: "disabled" });
}

describe("code versions in the browser", () => {
  it("walks from the timeline to the diff and to a run the latest code cannot take, which is refused the move naming the tasks and finishes on its own code, audited", async () => {
    const { engine, v1, v2 } = await deployedTwice(cleanups);
    const server = await startUiServer(engine);
    cleanups.push(() => server.close());
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId: "UTC" });
    cleanups.push(() => context.close());
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("dialog", (dialog) => {
      errors.push(`a dialog opened: ${dialog.message()}`);
      void dialog.dismiss();
    });

    await page.goto(`${server.url}/ui/pipelines/pinned/grid`);
    await page.locator("nav.tabs a", { hasText: "Versions" }).click();
    const rows = page.locator("table.t tbody tr");
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.id))).toEqual([`v-${v2}`, `v-${v1}`]);
    expect(await rows.nth(0).textContent()).toContain("latest");
    expect(await rows.nth(0).textContent()).toContain("bo");
    expect(await rows.nth(1).textContent()).toContain("ana");
    await shot(page, "versions");

    // The newest version's diff with the one before: the graph's changes, and the sources as text.
    await rows.nth(0).locator("a", { hasText: "diff with" }).click();
    await page.waitForURL(/\/versions\/diff\?/);
    const graph = await page.locator("table.graphdiff tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent!.trim())));
    expect(graph).toEqual([["publish", "+ added", ""], ["report", "− removed", ""], ["load", "~ changed", "kind function -> command; settings"]]);
    const sources = await page.locator("pre.diff").allTextContents();
    expect(sources.join("\n")).toContain(`-// first deploy: <script>alert("x")</script> & co`);
    expect(await page.locator("pre.diff .d-add", { hasText: `export const CODE = "v2";` }).count()).toBe(1);
    await shot(page, "version-diff");

    // The old run, from its version's page: the latest code cannot take it.
    await page.goto(`${server.url}/ui/pipelines/pinned/versions/${v1}`);
    await page.locator(`a[href="/ui/runs/${OLD_RUN}"]`).first().click();
    await page.waitForURL(new RegExp(`/ui/runs/${OLD_RUN}$`));
    const note = page.locator("#code-choice");
    expect(await note.textContent()).toContain(`The latest code (${v2.slice(0, 12)}) cannot take this run: task load is a command task in it (a function task in the run's); task report is not in it.`);
    expect(await page.locator("dd a", { hasText: v1 }).getAttribute("href")).toBe(`/ui/pipelines/pinned/versions/${v1}`);
    await shot(page, "run-code-choice");

    // Moving it is refused, naming the tasks and the other choice; nothing changes.
    await note.locator("summary", { hasText: "Move it to the latest code" }).click();
    const move = note.locator(`form[action="/ui/runs/${OLD_RUN}/clear"]`);
    await move.locator("input[name=reason]").fill("new code for the old day");
    await move.locator("button", { hasText: "Run it again on the latest code" }).click();
    await expect.poll(() => page.locator("#flash").textContent()).toBe(
      `Refused: run ${OLD_RUN} cannot move to the latest code (${v2}): task load is a command task in it (a function task in the run's); task report is not in it; Code: same finishes it on its own code (${v1})`,
    );
    expect((await engine.run(OLD_RUN)).codeVersion).toBe(v1);

    // Finishing on its own code is the operator's choice, with a reason, in the audit log.
    await page.locator("#code-choice summary", { hasText: "Finish on its own code" }).click();
    const keep = page.locator(`#code-choice form[action="/ui/runs/${OLD_RUN}/code/keep"]`);
    await keep.locator("input[name=reason]").fill("report must still run on the old code");
    await keep.locator("button", { hasText: "Finish on its own code" }).click();
    await expect.poll(() => page.locator("#flash").textContent()).toMatch(new RegExp(`^${OLD_RUN} finishes on its own code\\. Audit entry #\\d+ by ${UI_LOCAL_USER}\\.$`));
    expect(await page.locator("#code-kept").textContent()).toContain(`${UI_LOCAL_USER} chose it at`);
    const audit = await engine.runAudit(OLD_RUN, { actions: ["code-keep", "clear"] });
    expect(audit.map((e) => [e.action, e.actor, e.reason, e.details])).toEqual([
      ["code-keep", UI_LOCAL_USER, "report must still run on the old code", { codeVersion: v1, latest: v2, cannotMove: ["task load is a command task in it (a function task in the run's)", "task report is not in it"] }],
    ]);
    expect(errors).toEqual([]);
  });

  it("has no serious or critical accessibility violation on the versions, version, diff and run pages, and none scrolls sideways at 390 px", async () => {
    const { engine, v1, v2 } = await deployedTwice(cleanups);
    const server = await startUiServer(engine);
    cleanups.push(() => server.close());
    const paths = ["/ui/pipelines/pinned/versions", `/ui/pipelines/pinned/versions/${v1}`, `/ui/pipelines/pinned/versions/diff?from=${v1}&to=${v2}`, `/ui/runs/${OLD_RUN}`];
    for (const scheme of ["light", "dark"] as const) {
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId: "UTC", bypassCSP: true, reducedMotion: "reduce" });
      cleanups.push(() => context.close());
      const page = await context.newPage();
      await page.emulateMedia({ colorScheme: scheme });
      for (const path of paths) {
        expect((await page.goto(server.url + path))?.status(), path).toBe(200);
        await page.addScriptTag({ path: AXE });
        const violations = await page.evaluate(async () => {
          const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
          const result = await axe.run(document, { resultTypes: ["violations"] });
          return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
        });
        expect(violations, `${scheme} ${path}`).toEqual([]);
      }
    }
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, timezoneId: "UTC" });
    cleanups.push(() => phone.close());
    const page = await phone.newPage();
    for (const path of paths) {
      expect((await page.goto(server.url + path))?.status(), path).toBe(200);
      const layout = await page.evaluate(() => ({
        scrollWidth: document.scrollingElement!.scrollWidth,
        innerWidth,
        wide: [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > innerWidth + 1 && !e.closest("[class*=flush], pre"))
          .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.getAttribute("class") ?? ""}`),
      }));
      expect(layout.scrollWidth, `${path} at 390 px: ${layout.wide.join(", ")}`).toBeLessThanOrEqual(layout.innerWidth);
    }
  }, 120_000);
});
