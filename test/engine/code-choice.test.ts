import { describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import type { TaskInstanceRecord } from "../../src/store/port.ts";
import { cannotSurvive, codeLines, parseCodeChoice } from "../../src/engine/records/code-choice.ts";

const instance = (taskId: string, state: string) => ({ runId: "p@2026-09-01", taskId, state }) as TaskInstanceRecord;

const own = pipeline("p", {}, {
  extract: { run: () => {} },
  load: { after: ["extract"], run: () => {} },
  report: { after: ["load"], run: () => {} },
});
const latest = pipeline("p", {}, {
  extract: { run: () => {} },
  load: { after: ["extract"], command: ["true"] },
});

describe("which code a run runs again on", () => {
  it("finds what a run still has to run that the target code lacks or runs as another kind, and nothing it has done", () => {
    const live = [instance("extract", "success"), instance("load", "queued"), instance("report", "scheduled")];
    expect(cannotSurvive(live, own, latest, new Set())).toEqual([
      "task load is a command task in it (a function task in the run's)",
      "task report is not in it",
    ]);
    const done = [instance("extract", "success"), instance("load", "success"), instance("report", "failed")];
    expect(cannotSurvive(done, own, latest, new Set())).toEqual([]);
    expect(cannotSurvive(done, own, latest, new Set(["report"]))).toEqual(["task report is not in it"]);
    // The run's own code unknown (its bundle gone): only what the target lacks is known.
    expect(cannotSurvive(live, null, latest, new Set())).toEqual(["task report is not in it"]);
  });

  it("states a run's code against the latest, with the choice, and nothing when they agree", () => {
    expect(codeLines("p@2026-09-01", { codeVersion: "aaa", latest: "aaa", cannotMove: [] })).toEqual([]);
    expect(codeLines("p@2026-09-01", { codeVersion: null, latest: "bbb", cannotMove: [] })).toEqual([]);
    expect(codeLines("p@2026-09-01", { codeVersion: "aaa", latest: "bbb", cannotMove: [] })).toEqual([
      "run p@2026-09-01 runs its own code (version aaa); the latest is version bbb: clearing it on the latest code moves it there",
    ]);
    expect(codeLines("p@2026-09-01", { codeVersion: "aaa", latest: "bbb", cannotMove: ["task report is not in it"] })).toEqual([
      "run p@2026-09-01 runs its own code (version aaa); the latest code (version bbb) cannot take it: task report is not in it; it finishes on its own code unless it is cleared on the latest code",
    ]);
  });

  it("reads the choice, refusing anything but same or latest in one line naming the argument", () => {
    expect(parseCodeChoice(undefined, "latest")).toBe("latest");
    expect(parseCodeChoice("same", "latest")).toBe("same");
    expect(() => parseCodeChoice("newest", "same")).toThrow('code "newest": expected same or latest');
  });
});
