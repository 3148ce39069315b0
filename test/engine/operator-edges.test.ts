import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

describe("operator edges", () => {
  it("idem next lists no interval before start", async () => {
    h = await ScheduleHarness.open([pipeline("later", { schedule: daily({ at: "02:00" }), start: "2099-03-01" }, { t: { run: () => {} } })], "2026-09-01T00:00:00Z");
    expect(h.engine.preview("later", 2).map((d) => d.interval.businessDate)).toEqual(["2099-03-01", "2099-03-02"]);
  });

  it("idem trigger refuses an interval that has not ended yet", async () => {
    h = await ScheduleHarness.open([pipeline("p", { schedule: daily({ at: "02:00" }), start: "2026-09-01" }, { t: { run: () => {} } })], "2026-09-05T12:00:00Z");
    await expect(h.engine.trigger("p", "2026-09-05")).rejects.toThrow("pipeline p: 2026-09-05 has not ended: its interval ends at 2026-09-06 00:00 UTC; the newest date that can run now is 2026-09-04");
    await expect(h.engine.trigger("p", "2026-09-04")).resolves.toMatchObject({ runId: "p@2026-09-04" });
  });
});
