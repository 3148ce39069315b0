import { describe, expect, it } from "vitest";
import { fixedClock, offsetClock } from "../../../src/core/model/clock.ts";
import { FakeClock } from "../../../src/testing.ts";

describe("test clocks", () => {
  it("an offset clock reads the instant given, then runs on at its base's pace", async () => {
    const base = new FakeClock("2026-12-03T13:00:00Z");
    const clock = offsetClock(Date.parse("2026-09-05T12:00:00Z"), base);
    expect(new Date(clock.now()).toISOString()).toBe("2026-09-05T12:00:00.000Z");
    base.advance(90_000);
    expect(new Date(clock.now()).toISOString()).toBe("2026-09-05T12:01:30.000Z");
    await clock.sleep(30_000);
    expect(new Date(clock.now()).toISOString()).toBe("2026-09-05T12:02:00.000Z");
  });

  it("a fixed clock always reads its instant", () => {
    const base = new FakeClock("2026-12-03T13:00:00Z");
    const clock = fixedClock(Date.parse("2026-09-05T12:00:00Z"), base);
    base.advance(90_000);
    expect(new Date(clock.now()).toISOString()).toBe("2026-09-05T12:00:00.000Z");
  });
});
