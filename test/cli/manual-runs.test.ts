import { describe, expect, it } from "vitest";
import { processHarness } from "../support/processes.ts";

const h = processHarness();

const CONFIG = `import { defineConfig } from "idem";\nexport default defineConfig({ pipelines: "pipelines" });\n`;
const PIPELINES = `
import { pipeline, daily, hourly, manual } from "idem";
export const good = pipeline("good", { schedule: daily({ at: "02:00", timezone: "Europe/London" }), start: "2026-09-01" }, {
  load: { run: (ctx) => ({ date: ctx.businessDate }) },
});
export const hours = pipeline("hours", { schedule: hourly({ timezone: "UTC" }), start: "2026-09-01" }, {
  load: { run: () => {} },
});
export const adhoc = pipeline("adhoc", { schedule: manual({ timezone: "UTC" }) }, {
  load: { run: () => {} },
});
`;

function project() {
  h.create({ "idem.config.ts": CONFIG, "pipelines/all.ts": PIPELINES });
}

const DATE = String.raw`\d{4}-\d\d-\d\d`;

describe("a manual run of an interval that has not ended", () => {
  it("is refused by idem run --date, exit 2, naming the date, its end and the newest date that can run; no run is made", () => {
    project();
    const early = h.cli("run", "good", "--date", "2099-01-01");
    expect(early.status).toBe(2);
    expect(early.stderr).toMatch(new RegExp(
      `^idem: pipeline good: 2099-01-01 has not ended: its interval ends at 2099-01-02 00:00 Europe/London; the newest date that can run now is ${DATE}\n$`,
    ));
    expect(early.stdout).toBe("");
    const newest = /can run now is (\S+)\n/.exec(early.stderr)![1]!;
    expect(h.cli("runs", "good").stdout).toBe("no runs of good yet\n");
    // The date it names does run now.
    const ok = h.cli("run", "good", "--date", newest);
    expect([ok.status, ok.stdout]).toEqual([0, expect.stringContaining(`run good@${newest} success`)]);
  });

  it("leaves the day to the schedule: once it has ended, the ledger expects its run instead of showing an early one's success", () => {
    project();
    expect(h.cli("run", "good", "--date", "2026-09-05", "--now", "2026-09-05T12:00:00Z").status).toBe(2);
    const ledger = h.cli("expected", "good", "--json", "--now", "2026-09-06T03:00:00Z");
    const entry = (JSON.parse(ledger.stdout) as { interval: { businessDate: string }; status: string; runId: string | null }[])
      .find((e) => e.interval.businessDate === "2026-09-05");
    expect(entry).toMatchObject({ status: "missing", runId: null });
  });

  it("is refused by idem run --start/--end, naming the interval", () => {
    project();
    const early = h.cli("run", "hours", "--start", "2099-01-01T10:00:00Z", "--end", "2099-01-01T11:00:00Z");
    expect(early.status).toBe(2);
    expect(early.stderr).toMatch(new RegExp(
      String.raw`^idem: pipeline hours: \[2099-01-01 10:00, 2099-01-01 11:00\) UTC has not ended: its interval ends at 2099-01-01 11:00 UTC; ` +
        String.raw`the newest interval that can run now is \[${DATE} \d\d:00, ${DATE} \d\d:00\) UTC\n$`,
    ));
  });

  it("is refused by idem trigger the same way, and refused per interval by a backfill", () => {
    project();
    const trigger = h.cli("trigger", "good", "--date", "2099-01-01", "--reason", "too early");
    expect(trigger.status).toBe(2);
    expect(trigger.stderr).toMatch(/^idem: pipeline good: 2099-01-01 has not ended: its interval ends at 2099-01-02 00:00 Europe\/London; the newest date/);
    const plan = h.cli("backfill", "good", "--from", "2098-12-31", "--to", "2099-01-01", "--dry-run", "--json");
    expect(plan.status).toBe(0);
    expect(JSON.parse(plan.stdout).items.map((i: { action: string; why: string }) => `${i.action}: ${i.why}`)).toEqual([
      "refuse: in the future: its interval ends at 2099-01-01 00:00 Europe/London",
      "refuse: in the future: its interval ends at 2099-01-02 00:00 Europe/London",
    ]);
  });

  it("runs for a manual-only pipeline: no schedule would take it for its own run", () => {
    project();
    const run = h.cli("run", "adhoc", "--date", "2099-01-01");
    expect([run.status, run.stderr]).toEqual([0, ""]);
    expect(run.stdout).toMatch(/run adhoc@2099-01-01 success/);
  });
});
