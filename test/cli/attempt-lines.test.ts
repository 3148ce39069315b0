import { describe, expect, it } from "vitest";
import { AttemptLines, SUCCESS_LINES_PER_SECOND } from "../../src/cli/actions/attempt-lines.ts";
import type { ClaimedAttempt } from "../../src/store/port.ts";

const claim = (n: number) => ({ runId: `p@2026-09-${String(n).padStart(2, "0")}`, taskId: "t", tryNumber: 1 }) as ClaimedAttempt;
const success = { taskState: "success", errorMessage: null };

describe("the worker's attempt lines", () => {
  it("lists every attempt that did not succeed and the first successes of each second, counts the rest, and writes them together", () => {
    const writes: string[] = [];
    let now = Date.UTC(2026, 8, 1, 12, 0, 0);
    const lines = new AttemptLines((text) => writes.push(text), () => now);
    for (let i = 1; i <= 25; i++) lines.attempt({ ...claim(i), ...success });
    lines.attempt({ ...claim(26), taskState: "up_for_retry", errorMessage: "TaskFailed: boom" });
    expect(writes).toEqual([]); // gathered, not one write per attempt
    now += 1_000; // the next second: listed again from its first success
    lines.attempt({ ...claim(27), ...success });
    lines.close();
    expect(writes).toHaveLength(1);
    const out = writes[0]!.trimEnd().split("\n").map((l) => l.slice("2026-09-01T12:00:00.000Z ".length));
    expect(out).toEqual([
      ...Array.from({ length: SUCCESS_LINES_PER_SECOND }, (_, i) => `${claim(i + 1).runId} t try 1: success`),
      "p@2026-09-26 t try 1: up_for_retry (TaskFailed: boom)",
      `... and ${25 - SUCCESS_LINES_PER_SECOND} more attempt(s) succeeded in this second`,
      "p@2026-09-27 t try 1: success",
    ]);
  });
});
