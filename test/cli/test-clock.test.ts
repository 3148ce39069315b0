import { describe, expect, it } from "vitest";
import { processHarness, startIdemWith, waitFor } from "../support/processes.ts";

const h = processHarness();

const CONFIG = `import { defineConfig } from "idem";\nexport default defineConfig({ pipelines: "pipelines" });\n`;
// 02:00 in London is 01:00 UTC in September: 2026-09-03 fires at 2026-09-04T01:00:00Z.
const GOOD = `
import { pipeline, daily } from "idem";
export const good = pipeline("good", { schedule: daily({ at: "02:00", timezone: "Europe/London" }), start: "2026-09-01" }, {
  load: { run: (ctx) => ({ date: ctx.businessDate }) },
});
`;

function project() {
  h.create({ "idem.config.ts": CONFIG, "pipelines/good.ts": GOOD });
}

interface RunJson {
  runId: string;
  triggeredBy: string;
  reason: string | null;
  startedAt: number | null;
}

describe("a test clock (--now, IDEM_NOW)", () => {
  it("idem run --now refuses and runs as at that instant, and marks the run and its audit entry", () => {
    project();
    const early = h.cli("run", "good", "--date", "2026-09-05", "--now", "2026-09-05T12:00:00Z");
    expect([early.status, early.stderr]).toEqual([2,
      "idem: test clock from 2026-09-05T12:00:00.000Z (--now), not the system clock: runs and audit entries made under it say so\n" +
        "idem: pipeline good: 2026-09-05 has not ended: its interval ends at 2026-09-06 00:00 Europe/London; the newest date that can run now is 2026-09-04\n",
    ]);
    const run = h.cli("--user", "ana", "run", "good", "--date", "2026-09-04", "--now", "2026-09-05T12:00:00Z");
    expect([run.status, run.stdout]).toEqual([0, expect.stringContaining("run good@2026-09-04 success")]);
    const [made] = JSON.parse(h.cli("runs", "good", "--json").stdout) as RunJson[];
    expect(made).toMatchObject({ runId: "good@2026-09-04", triggeredBy: "ana (test clock)", reason: "[test clock from 2026-09-05T12:00:00.000Z (--now)]" });
    // The clock runs on from the instant given, not from the system's time.
    expect(made!.startedAt! - Date.parse("2026-09-05T12:00:00Z")).toBeGreaterThanOrEqual(0);
    expect(made!.startedAt! - Date.parse("2026-09-05T12:00:00Z")).toBeLessThan(60_000);
    expect(h.cli("runs", "good").stdout).toMatch(/good@2026-09-04\s+2026-09-04\s+success\s+manual\s+ana \(test clock\)\s+2026-09-05T12:00:/);
    const audit = h.cli("audit", "--json");
    expect(JSON.parse(audit.stdout)[0]).toMatchObject({ action: "trigger", runId: "good@2026-09-04", details: { clock: "test clock from 2026-09-05T12:00:00.000Z (--now)" } });
    expect(h.cli("audit").stdout).toMatch(/clock=test clock from 2026-09-05T12:00:00.000Z \(--now\)/);
  });

  it("idem expected answers at the instant given by --now or IDEM_NOW", () => {
    project();
    const dates = (out: string) => (JSON.parse(out) as { interval: { businessDate: string }; status: string }[]).map((e) => `${e.interval.businessDate} ${e.status}`);
    const flag = h.cli("expected", "good", "--json", "--now", "2026-09-04T03:00:00Z");
    expect([flag.status, flag.stderr]).toEqual([0, "idem: test clock at 2026-09-04T03:00:00.000Z (--now), not the system clock\n"]);
    expect(dates(flag.stdout).sort()).toEqual(["2026-09-01 missing", "2026-09-02 missing", "2026-09-03 missing"]);
    const env = h.cliWith({ IDEM_NOW: "2026-09-04T00:59:59Z" }, "expected", "good", "--json");
    expect(env.stderr).toBe("idem: test clock at 2026-09-04T00:59:59.000Z (IDEM_NOW), not the system clock\n");
    expect(dates(env.stdout).sort()).toEqual(["2026-09-01 missing", "2026-09-02 missing"]);
    // The flag wins over the variable.
    const both = h.cliWith({ IDEM_NOW: "2026-09-04T00:59:59Z" }, "next", "good", "--json", "-n", "1", "--now", "2026-09-10T12:00:00+02:00");
    expect(JSON.parse(both.stdout).map((d: { businessDate: string }) => d.businessDate)).toEqual(["2026-09-10"]);
  });

  it("refuses a value that is not an instant, naming the flag or the variable and the format", () => {
    project();
    const flag = h.cli("run", "good", "--date", "2026-09-01", "--now", "2026-02-30T00:00:00Z");
    expect(flag.status).toBe(2);
    expect(flag.stderr.split("\n")[0]).toBe("error: option '--now <instant>' argument '2026-02-30T00:00:00Z' is invalid. Expected an instant with Z or an offset, like 2026-09-02T03:00:00Z.");
    const env = h.cliWith({ IDEM_NOW: "tomorrow" }, "expected", "good");
    expect([env.status, env.stderr]).toEqual([2, 'idem: IDEM_NOW "tomorrow": expected an instant with Z or an offset, like 2026-09-02T03:00:00Z\n']);
    expect(h.cliWith({ IDEM_NOW: "2026-09-04" }, "scheduler").stderr).toBe('idem: IDEM_NOW "2026-09-04": expected an instant with Z or an offset, like 2026-09-02T03:00:00Z\n');
  });

  it("a scheduler under IDEM_NOW catches up to that instant and marks the runs it makes; a worker under it runs them on that clock", async () => {
    project();
    const scheduler = startIdemWith(h.project, { IDEM_NOW: "2026-09-03T03:00:00Z" }, "scheduler");
    const worker = startIdemWith(h.project, { IDEM_NOW: "2026-09-03T03:00:00Z" }, "worker");
    try {
      const runs = await waitFor("the scheduler's two runs, run by the worker", () => {
        const list = JSON.parse(h.cli("runs", "good", "--json").stdout || "[]") as (RunJson & { state: string })[];
        return list.length === 2 && list.every((r) => r.state === "success") ? list : undefined;
      });
      for (const run of runs) expect(run.startedAt! - Date.parse("2026-09-03T03:00:00Z")).toBeLessThan(60_000);
      expect(runs.map((r) => [r.runId, r.triggeredBy, r.reason])).toEqual([
        ["good@2026-09-02", "scheduler (test clock)", "[test clock from 2026-09-03T03:00:00.000Z (IDEM_NOW)]"],
        ["good@2026-09-01", "scheduler (test clock)", "[test clock from 2026-09-03T03:00:00.000Z (IDEM_NOW)]"],
      ]);
      await waitFor("the line that says which clock", () =>
        /^idem: test clock from 2026-09-03T03:00:00.000Z \(IDEM_NOW\), not the system clock: runs and audit entries made under it say so$/m.test(scheduler.output()) || undefined);
    } finally {
      await Promise.all([scheduler.stop(), worker.stop()]);
    }
  });
});
