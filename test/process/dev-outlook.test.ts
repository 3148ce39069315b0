import { describe, expect, it } from "vitest";
import { processHarness, waitFor } from "../support/processes.ts";

const h = processHarness();

const CONFIG = `import { defineConfig } from "idem";\nexport default defineConfig({ pipelines: "pipelines" });\n`;
const PIPELINES = `
import { pipeline, daily, hourly, manual } from "idem";
const task = { load: { run: () => {} } };
export const good = pipeline("good", { schedule: daily({ at: "02:00", timezone: "Europe/London" }), start: "2026-09-01", maxActiveRuns: 2 }, task);
export const hours = pipeline("hours", { schedule: hourly({ timezone: "UTC" }), start: "2026-09-05", catchup: "latest" }, task);
export const later = pipeline("later", { schedule: daily({ at: "06:00", timezone: "America/New_York" }), start: "2027-03-01" }, task);
export const adhoc = pipeline("adhoc", { schedule: manual({ timezone: "UTC" }) }, task);
`;

describe("idem dev at start", () => {
  it("says per pipeline what it catches up and when it next fires, with the business date that fire loads", async () => {
    h.create({ "idem.config.ts": CONFIG, "pipelines/all.ts": PIPELINES });
    // 2026-09-04 has its run already: catch-up passes over it.
    expect(h.cli("run", "good", "--date", "2026-09-04", "--now", "2026-09-05T03:00:00Z").status).toBe(0);
    const dev = h.start("dev", "--no-serve", "--now", "2026-09-05T03:00:00Z");
    const said = await waitFor("the outlook of the four pipelines", () => {
      const lines = dev.output().split("\n").map((l) => l.replace(/^\S+Z /, ""));
      // The first line naming each pipeline: the scheduler logs more about them once it runs.
      const outlook = ["adhoc", "good", "hours", "later"].map((id) => lines.find((l) => l.startsWith(`${id}: `)));
      return outlook.every((l) => l !== undefined) ? outlook : undefined;
    });
    await dev.stop();
    expect(said).toEqual([
      "adhoc: manual schedule: runs only when asked",
      "good: catches up 3 interval(s) now, 2026-09-01..2026-09-03, up to 2 at once; next fire 2026-09-06 02:00 Europe/London loads 2026-09-05",
      'hours: catch-up "latest": runs [2026-09-05 02:00, 2026-09-05 03:00) UTC now and skips the 2 interval(s) before it; next fire 2026-09-05 04:00 UTC loads [2026-09-05 03:00, 2026-09-05 04:00) UTC',
      "later: next fire 2027-03-02 06:00 America/New_York loads 2027-03-01",
    ]);
  });
});
