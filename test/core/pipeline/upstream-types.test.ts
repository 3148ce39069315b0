import { describe, expect, it } from "vitest";
import { pipeline, manual, type SummaryOf, type TaskContext } from "../../../src/index.ts";
import { runTask } from "../../../src/testing.ts";

async function load(ctx: TaskContext) {
  return { rowsLoaded: ctx.businessDate.length };
}

// Typed where the pipeline is typed: the check names what it reads from which upstream task.
async function check(ctx: TaskContext<{}, { load: SummaryOf<typeof load> }>) {
  const loaded: number | undefined = ctx.upstream.load?.rowsLoaded;
  // @ts-expect-error rowsLoaded is a number, not a string
  const wrong: string | undefined = ctx.upstream.load?.rowsLoaded;
  // @ts-expect-error load reported no such field
  void ctx.upstream.load?.rowsWritten;
  void wrong;
  return { checked: loaded ?? -1 };
}

describe("ctx.upstream", () => {
  it("a task typed for its upstream fits a pipeline, and runTask hands it the upstream summary", async () => {
    const p = pipeline("typed", { schedule: manual() }, { load: { run: load }, check: { after: ["load"], run: check } });
    expect([...p.tasks.keys()]).toEqual(["load", "check"]);
    const { summary } = await runTask(check, { businessDate: "2026-09-01", upstream: { load: { rowsLoaded: 10 } } });
    expect(summary).toEqual({ checked: 10 });
  });
});
