import { describe, expect, it } from "vitest";
import { TRIGGER_KINDS } from "../../../src/core/model/states.ts";
import { incrementalRead, movesWatermark } from "../../../src/core/policy/incremental-reads.ts";

describe("what an incremental load reads, by the run's trigger", () => {
  it("reads the stream in the pipeline's own runs and its interval's window in every run a person or a backfill asked for", () => {
    expect(Object.fromEntries(TRIGGER_KINDS.map((t) => [t, incrementalRead(t)]))).toEqual({
      schedule: "stream", data: "stream", manual: "window", backfill: "window", restate: "window",
    });
    expect(incrementalRead(null)).toBe("unknown");
    expect(incrementalRead(undefined)).toBe("unknown");
  });

  it("lets only a run that reads the stream (or a loader outside idem) move a watermark", () => {
    for (const t of [...TRIGGER_KINDS, null]) expect(movesWatermark(t)).toBe(incrementalRead(t) !== "window");
    expect(TRIGGER_KINDS.filter((t) => movesWatermark(t))).toEqual(["schedule", "data"]);
  });
});
