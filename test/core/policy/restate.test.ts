import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { RunState, TaskState } from "../../../src/core/model/states.ts";
import { decideRestatements, restatedTasks, restateRoom, restateWindow, type RestateInput, type WindowRun } from "../../../src/core/policy/restate.ts";
import { addDays } from "../../../src/core/time/dates.ts";
import { daily, hourly } from "../../../src/core/time/index.ts";

const RUNS = { numRuns: Number(process.env.IDEM_FC_RUNS ?? 300) };
const DAY = 86_400_000;
const HEAD_FIRES = Date.UTC(2026, 8, 21, 2);
const FIRST = "2026-09-01";

/** A window of up to 10 earlier days with runs in any state, frozen periods, backfills and room. */
const input: fc.Arbitrary<RestateInput> = fc
  .record({
    runs: fc.array(
      fc.record({
        state: fc.constantFrom<RunState>("queued", "running", "success", "failed"),
        // ended before or after the head fired
        endedOffset: fc.integer({ min: -5 * DAY, max: DAY }),
        inBackfill: fc.boolean(),
      }),
      { maxLength: 10 },
    ),
    frozen: fc.option(fc.tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 4 })), { nil: null }),
    backfill: fc.option(fc.tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 4 })), { nil: null }),
    headLive: fc.boolean(),
    room: fc.integer({ min: 0, max: 12 }),
  })
  .map(({ runs, frozen, backfill, headLive, room }) => ({
    head: { businessDate: addDays(FIRST, 19), firesAt: HEAD_FIRES, live: headLive },
    window: runs.map((r, i): WindowRun => {
      const businessDate = addDays(FIRST, 18 - i);
      const live = r.state === "queued" || r.state === "running";
      return {
        runId: `p@${businessDate}`, businessDate, intervalStart: Date.parse(`${businessDate}T00:00:00Z`), state: r.state,
        endedAt: live ? null : HEAD_FIRES + r.endedOffset, backfillId: r.inBackfill ? "bf_old" : null,
      };
    }),
    frozen: frozen ? [{ from: addDays(FIRST, frozen[0]), to: addDays(FIRST, frozen[0] + frozen[1]), owner: "finance", reason: "closed" }] : [],
    liveBackfills: backfill ? [{ backfillId: "bf_live", fromDate: addDays(FIRST, backfill[0]), toDate: addDays(FIRST, backfill[0] + backfill[1]) }] : [],
    room,
  }));

const isLive = (r: WindowRun) => r.state === "queued" || r.state === "running";
const frozenOn = (i: RestateInput, date: string) => i.frozen.some((f) => f.from <= date && date <= f.to);
const coveredByBackfill = (i: RestateInput, r: WindowRun) =>
  i.liveBackfills.some((b) => b.backfillId === r.backfillId || (b.fromDate <= r.businessDate && r.businessDate <= b.toDate));
const needsIt = (i: RestateInput, r: WindowRun) => !isLive(r) && r.endedAt! < i.head.firesAt;

describe("the restatement decision", () => {
  it("decides once for every run of the window, newest interval first", () => {
    fc.assert(
      fc.property(input, (i) => {
        const decisions = decideRestatements(i);
        expect(decisions.map((d) => d.runId)).toEqual([...i.window].sort((a, b) => b.intervalStart - a.intervalStart).map((r) => r.runId));
      }),
      RUNS,
    );
  });

  it("starts only ended runs that ended before the head fired, never frozen, never a backfill's, never before the head's run ends, within the room", () => {
    fc.assert(
      fc.property(input, (i) => {
        const decisions = decideRestatements(i);
        const started = decisions.filter((d) => d.action === "start");
        expect(started.length).toBeLessThanOrEqual(i.room);
        if (i.head.live) expect(started).toEqual([]);
        for (const d of started) {
          const run = i.window.find((r) => r.runId === d.runId)!;
          expect(needsIt(i, run)).toBe(true);
          expect(frozenOn(i, run.businessDate)).toBe(false);
          expect(coveredByBackfill(i, run)).toBe(false);
        }
      }),
      RUNS,
    );
  });

  it("refuses exactly the frozen runs that would need it, naming the period's reason; covers exactly those that ran after the head fired", () => {
    fc.assert(
      fc.property(input, (i) => {
        for (const d of decideRestatements(i)) {
          const run = i.window.find((r) => r.runId === d.runId)!;
          expect(d.action === "refuse").toBe(needsIt(i, run) && frozenOn(i, run.businessDate));
          if (d.action === "refuse") expect(d.why).toMatch(/frozen .*: closed$/);
          expect(d.action === "covered").toBe(!isLive(run) && run.endedAt! >= i.head.firesAt);
        }
      }),
      RUNS,
    );
  });

  it("uses all the room it may, and gives it to the newest eligible days first", () => {
    fc.assert(
      fc.property(input, (i) => {
        const decisions = decideRestatements(i);
        const eligible = decisions.filter((d) => d.action === "start" || /run cap/.test(d.why));
        const started = eligible.filter((d) => d.action === "start");
        expect(started.length).toBe(Math.min(i.room, eligible.length));
        expect(eligible.slice(0, started.length)).toEqual(started);
      }),
      RUNS,
    );
  });

  it("never restates a run twice for one head: once restated and ended, it is covered", () => {
    fc.assert(
      fc.property(input, fc.integer({ min: 0, max: DAY }), (i, took) => {
        const started = new Set(decideRestatements(i).filter((d) => d.action === "start").map((d) => d.runId));
        // the restatements ran and ended (after the head fired, since they started after it)
        const after = { ...i, room: 100, window: i.window.map((r) => (started.has(r.runId) ? { ...r, state: "success" as const, endedAt: i.head.firesAt + took } : r)) };
        for (const d of decideRestatements(after)) if (started.has(d.runId)) expect(d.action).toBe("covered");
      }),
      RUNS,
    );
  });

  it("keeps one slot of the run cap for the schedule, unless the cap is one", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 0, max: 70 }), (cap, live) => {
        const room = restateRoom(cap, live);
        expect(room).toBeGreaterThanOrEqual(0);
        expect(room).toBe(cap > 1 ? Math.max(0, cap - 1 - live) : live === 0 ? 1 : 0);
      }),
      RUNS,
    );
  });
});

describe("the restatement window", () => {
  const zones = fc.constantFrom("UTC", "Europe/London", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia");

  it("is the `last` intervals just before the head, tiling back with no gap, none before the start", () => {
    fc.assert(
      fc.property(
        zones, fc.boolean(), fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 1, max: 40 }), fc.option(fc.integer({ min: 0, max: 60 }), { nil: null }),
        (timezone, hourlyKind, dayOffset, last, startBack) => {
          const schedule = hourlyKind ? hourly({ timezone }) : daily({ at: "02:00", timezone });
          const head = schedule.intervalAt(Date.UTC(2012, 0, 1) + dayOffset * DAY);
          const start = startBack === null ? null : schedule.intervalAt(head.start - startBack * (hourlyKind ? 3_600_000 : DAY) - 1).start;
          const window = restateWindow(schedule, head, last, start);
          expect(window.length).toBeLessThanOrEqual(last);
          let end = head.start;
          for (const interval of window) {
            expect(interval.end).toBe(end);
            if (start !== null) expect(interval.start).toBeGreaterThanOrEqual(start);
            end = interval.start;
          }
          if (window.length < last) expect(start).not.toBeNull();
        },
      ),
      RUNS,
    );
  });
});

describe("the tasks a restatement runs", () => {
  const tasks = fc.uniqueArray(
    fc.record({ taskId: fc.constantFrom("a", "b", "c", "d", "e"), restate: fc.boolean(), state: fc.constantFrom<TaskState>("success", "failed", "upstream_failed", "skipped") }),
    { selector: (t) => t.taskId, minLength: 1 },
  );

  it("are all of them unless one opts out; then the taking part ones and opted-out ones that never completed", () => {
    fc.assert(
      fc.property(tasks, (list) => {
        const chosen = restatedTasks(list, new Map(list.map((t) => [t.taskId, t.state])));
        if (list.every((t) => t.restate)) expect(chosen).toBeNull();
        else expect(new Set(chosen)).toEqual(new Set(list.filter((t) => t.restate || t.state === "failed" || t.state === "upstream_failed").map((t) => t.taskId)));
      }),
      RUNS,
    );
  });
});
