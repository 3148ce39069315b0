import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import type { FrozenPeriod } from "../../src/core/policy/frozen.ts";
import { daily } from "../../src/core/time/index.ts";
import { describeAuditDetails } from "../../src/engine/audit-details.ts";
import { Engine } from "../../src/engine/engine.ts";
import { Scheduler } from "../../src/engine/scheduler/scheduler.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

const SEPTEMBER_WEEK: FrozenPeriod = { from: "2026-09-08", to: "2026-09-14", owner: "finance", reason: "week closed" };

function sales(frozen: FrozenPeriod[]) {
  return pipeline("sales", { schedule: daily({ at: "02:00" }), start: "2026-09-03", frozen }, { load: { run: () => {} } });
}

/** A scheduler (as after a reload) and an engine that load this version of the pipeline. */
function loaded(p: ReturnType<typeof sales>, frozen?: FrozenPeriod[]) {
  return {
    scheduler: new Scheduler({ store: h.store, clock: h.clock, pipelines: [p], holder: "scheduler-1", frozen }),
    engine: new Engine({ store: h.store, clock: h.clock, stateDir: h.dir, pipelines: [p], frozen }),
  };
}

const frozenChanges = async () => (await h.engine.audit({ limit: 100 })).filter((e) => e.action === "frozen-periods").reverse();

describe("the audit of a backfill", () => {
  it("lists the refused dates with their reasons, merged into ranges, and the frozen dates it opened", async () => {
    h = await ScheduleHarness.open([sales([SEPTEMBER_WEEK])], "2026-09-20T12:00:00Z");
    await h.engine.pause("sales", { note: "backfill only" });
    await h.engine.trigger("sales", "2026-09-16", { reason: "early look" }); // queued: a run already active
    const { backfill } = await h.engine.backfill("sales", { from: "2026-09-01", to: "2026-09-22", reason: "rebuild after the fix", actor: "ana" });
    const [entry] = await h.engine.audit({ pipelineId: "sales", limit: 1 });
    expect(entry).toMatchObject({ action: "backfill", actor: "ana", reason: "rebuild after the fix" });
    expect(entry!.details).toEqual({
      backfillId: backfill.backfillId, from: "2026-09-01", to: "2026-09-22", reprocess: "none", openFrozen: null,
      // A pipeline defined in memory has no bundle: its dates run unpinned code.
      code: { choice: "latest", versions: [
        { from: "2026-09-03", to: "2026-09-07", version: null },
        { from: "2026-09-15", to: "2026-09-15", version: null },
        { from: "2026-09-17", to: "2026-09-19", version: null },
      ] },
      planned: 9, left: 0,
      refused: [
        { from: "2026-09-01", to: "2026-09-02", why: "before the pipeline's start" },
        { from: "2026-09-08", to: "2026-09-14", why: "frozen 2026-09-08..2026-09-14 by finance: week closed" },
        { from: "2026-09-16", to: "2026-09-16", why: "run sales@2026-09-16 is already queued" },
        { from: "2026-09-20", to: "2026-09-22", why: "in the future: not ended yet" },
      ],
      frozenOpened: [],
    });
    expect(describeAuditDetails(entry!)).toBe(
      "2026-09-01..2026-09-22: 9 to run, 0 left; refused 2026-09-01..2026-09-02 (before the pipeline's start), " +
        "2026-09-08..2026-09-14 (frozen 2026-09-08..2026-09-14 by finance: week closed), 2026-09-16 (run sales@2026-09-16 is already queued), " +
        "2026-09-20..2026-09-22 (in the future: not ended yet)",
    );
  });

  it("names the frozen dates a backfill opened, with the period's owner and the opening reason", async () => {
    h = await ScheduleHarness.open([sales([SEPTEMBER_WEEK])], "2026-09-20T12:00:00Z");
    await h.engine.pause("sales", { note: "backfill only" });
    await h.engine.backfill("sales", { from: "2026-09-12", to: "2026-09-15", reason: "restate", openFrozen: "approved by finance, ticket 81", actor: "ana" });
    const [entry] = await h.engine.audit({ pipelineId: "sales", limit: 1 });
    expect(entry!.details).toMatchObject({
      planned: 4, refused: [], openFrozen: "approved by finance, ticket 81",
      frozenOpened: [{ from: "2026-09-12", to: "2026-09-14", why: "frozen 2026-09-08..2026-09-14 by finance: week closed" }],
    });
    expect(describeAuditDetails(entry!)).toBe(
      "2026-09-12..2026-09-15: 4 to run, 0 left; frozen opened (approved by finance, ticket 81): 2026-09-12..2026-09-14 (frozen 2026-09-08..2026-09-14 by finance: week closed)",
    );
  });
});

describe("clearing a run of a frozen date", () => {
  it("is refused naming openFrozen, and done with it, the opening reason in the audit entry", async () => {
    h = await ScheduleHarness.open([sales([SEPTEMBER_WEEK])], "2026-09-20T12:00:00Z");
    await h.engine.trigger("sales", "2026-09-10", { openFrozen: "first load of the week", reason: "load it", actor: "ana" });
    await expect(h.engine.clear("sales@2026-09-10", { reason: "again", actor: "ana" })).rejects.toThrow(
      'pipeline sales: 2026-09-10 is frozen 2026-09-08..2026-09-14 by finance: week closed; give openFrozen to run it anyway',
    );
    expect((await h.engine.audit({ pipelineId: "sales", limit: 10 })).filter((e) => e.action === "clear")).toEqual([]);
    const tasks = await h.engine.clear("sales@2026-09-10", { reason: "again", openFrozen: "finance agreed (ticket 82)", actor: "ana" });
    expect(tasks.map((t) => t.state)).toEqual(["queued"]);
    const [entry] = await h.engine.audit({ pipelineId: "sales", limit: 1 });
    expect(entry).toMatchObject({ action: "clear", actor: "ana", reason: "again", details: { openFrozen: "finance agreed (ticket 82)" } });
  });
});

describe("changes of frozen periods", () => {
  it("records a new graph version whose frozen periods changed once, with what was added, removed and changed", async () => {
    const v1 = sales([SEPTEMBER_WEEK, { from: "2026-08-01", to: "2026-08-31", owner: "finance", reason: "August closed" }]);
    h = await ScheduleHarness.open([v1], "2026-09-20T12:00:00Z");
    await h.engine.pause("sales", { note: "no runs needed here" });
    await h.scheduler.tick();
    const first = await frozenChanges();
    expect(first.map((e) => [e.actor, e.pipelineId, e.graphVersion, e.reason])).toEqual([[
      "scheduler", "sales", v1.version,
      "the frozen periods of sales changed (graph version none -> " + v1.version + "): added frozen 2026-08-01..2026-08-31 by finance: August closed; " +
        "added frozen 2026-09-08..2026-09-14 by finance: week closed",
    ]]);

    const v2 = sales([
      { ...SEPTEMBER_WEEK, owner: "controlling", reason: "week closed, audited" },
      { from: "2026-10-01", to: "2026-10-31", owner: "tax", reason: "October filed" },
    ]);
    const after = loaded(v2);
    await after.scheduler.tick();
    await after.scheduler.tick();
    await after.engine.trigger("sales", "2026-09-18", { actor: "bo" }); // another process, same version: nothing new
    await loaded(v2).scheduler.tick();
    const changes = await frozenChanges();
    expect(changes).toHaveLength(2);
    const change = changes[1]!;
    expect(change).toMatchObject({ actor: "scheduler", action: "frozen-periods", pipelineId: "sales", graphVersion: v2.version });
    expect(change.reason).toBe(
      `the frozen periods of sales changed (graph version ${v1.version} -> ${v2.version}): added frozen 2026-10-01..2026-10-31 by tax: October filed; ` +
        "removed frozen 2026-08-01..2026-08-31 by finance: August closed; " +
        'changed frozen 2026-09-08..2026-09-14: owner finance -> controlling, reason "week closed" -> "week closed, audited"',
    );
    expect(change.details).toMatchObject({
      scope: "pipeline", previousGraphVersion: v1.version,
      added: [{ from: "2026-10-01", to: "2026-10-31", owner: "tax", reason: "October filed" }],
      removed: [{ from: "2026-08-01", to: "2026-08-31", owner: "finance", reason: "August closed" }],
      changed: [{ from: "2026-09-08", to: "2026-09-14", before: { owner: "finance", reason: "week closed" }, after: { owner: "controlling", reason: "week closed, audited" } }],
    });

    // Going back to the first version is a change too, although that version is known already.
    await loaded(v1).scheduler.tick();
    const back = await frozenChanges();
    expect(back).toHaveLength(3);
    expect(back[2]!.details).toMatchObject({ previousGraphVersion: v2.version, added: [{ from: "2026-08-01" }], removed: [{ from: "2026-10-01" }] });
  });

  it("records no change for a new version that keeps its frozen periods, nor for a pipeline that never had any", async () => {
    h = await ScheduleHarness.open([sales([SEPTEMBER_WEEK])], "2026-09-20T12:00:00Z");
    await h.scheduler.tick();
    const other = pipeline("sales", { schedule: daily({ at: "03:00" }), start: "2026-09-03", frozen: [SEPTEMBER_WEEK] }, { load: { run: () => {} } });
    await loaded(other).scheduler.tick();
    const none = pipeline("plain", { schedule: daily({ at: "02:00" }), start: "2026-09-03" }, { load: { run: () => {} } });
    await new Scheduler({ store: h.store, clock: h.clock, pipelines: [none], holder: "scheduler-1" }).tick();
    expect((await frozenChanges()).map((e) => e.graphVersion)).toEqual([h.pipelines[0]!.version]);
  });

  it("records a change of the project's frozen periods, seen by a scheduler or an engine given them", async () => {
    h = await ScheduleHarness.open([sales([])], "2026-09-20T12:00:00Z");
    await h.engine.pause("sales", { note: "no runs needed here" });
    const project: FrozenPeriod[] = [{ from: "2026-06-01", to: "2026-06-30", owner: "finance", reason: "H1 closed" }];
    await loaded(h.pipelines[0]!, project).scheduler.tick();
    await loaded(h.pipelines[0]!, project).engine.trigger("sales", "2026-09-18");
    const wider = [{ ...project[0]!, to: "2026-07-31" }];
    await loaded(h.pipelines[0]!, wider).engine.trigger("sales", "2026-09-17", { actor: "ana" });
    const changes = await frozenChanges();
    expect(changes.map((e) => [e.actor, e.pipelineId, e.graphVersion, e.reason])).toEqual([
      ["scheduler", null, null, "the project's frozen periods (idem.config.ts) changed: added frozen 2026-06-01..2026-06-30 by finance: H1 closed"],
      ["ana", null, null, "the project's frozen periods (idem.config.ts) changed: added frozen 2026-06-01..2026-07-31 by finance: H1 closed; removed frozen 2026-06-01..2026-06-30 by finance: H1 closed"],
    ]);
    expect(changes[1]!.details).toMatchObject({ scope: "project", periods: wider });
  });

  it("reports a pipeline's frozen periods with owner, reason and where each is declared, and the changes newest first", async () => {
    h = await ScheduleHarness.open([sales([SEPTEMBER_WEEK])], "2026-09-20T12:00:00Z");
    const project: FrozenPeriod[] = [{ from: "2026-06-01", to: "2026-06-30", owner: "finance", reason: "H1 closed" }];
    const report = await loaded(h.pipelines[0]!, project).engine.frozenReport("sales");
    expect(report.periods).toEqual([{ ...SEPTEMBER_WEEK, declaredIn: "pipeline" }, { ...project[0]!, declaredIn: "project" }]);
    expect(report.changes.map((e) => [e.pipelineId, e.details.scope])).toEqual([[null, "project"], ["sales", "pipeline"]]);
  });
});
