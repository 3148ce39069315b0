import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import type { Principal } from "../../src/http/env.ts";
import { runPage } from "../../src/http/ui/pages/run.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

const WEEK = { from: "2026-09-08", to: "2026-09-14", owner: "finance", reason: "week closed" };
const sales = pipeline("sales", { schedule: daily({ at: "02:00" }), start: "2026-09-03", frozen: [WEEK] }, { load: { run: () => {} } });

function viewAs(role: "operator" | "viewer") {
  const principal: Principal = { actor: role === "operator" ? "olga" : "vic", role, mayAct: role === "operator", localUser: false, via: "cookie" };
  return { principal, csrf: "t", url: new URL("http://127.0.0.1/ui/runs/sales@2026-09-10"), zones: [], flash: null };
}

describe("a run of a frozen date in the UI", () => {
  it("says it is frozen to everyone, and offers the way out (a reason for opening the period) to an operator only", async () => {
    h = await ScheduleHarness.open([sales], "2026-09-20T12:00:00Z");
    await h.engine.trigger("sales", "2026-09-10", { openFrozen: "first load", reason: "load", actor: "olga" });
    const operator = (await runPage(h.engine, viewAs("operator"), "sales@2026-09-10")).value;
    const viewer = (await runPage(h.engine, viewAs("viewer"), "sales@2026-09-10")).value;
    for (const page of [operator, viewer]) expect(page).toContain("2026-09-10 is frozen</b>: 2026-09-08..2026-09-14 by <b>finance</b>: week closed.");
    expect(operator.match(/name="openFrozen" required/g)).toHaveLength(1);
    expect(viewer).not.toContain('name="openFrozen"');
    expect(viewer).toContain("Only an operator may open the frozen period to rewrite it.");
    // A date outside the period asks nothing of the kind.
    await h.engine.trigger("sales", "2026-09-15", { reason: "load", actor: "olga" });
    expect((await runPage(h.engine, viewAs("operator"), "sales@2026-09-15")).value).not.toMatch(/openFrozen|is frozen/);
  });
});
