import { ErrorClass } from "../../src/core/model/error-classes.ts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TASK_STATES } from "../../src/core/model/states.ts";
import { FAILING_TASK_STATES, LIVE_TASK_STATES } from "../../src/core/policy/run-progress.ts";
import { StoreConflictError, type ClaimedAttempt, type Store } from "../../src/store/port.ts";
import { newRun, tasksOf } from "../support/shapes.ts";

const T0 = Date.parse("2026-09-02T02:00:00Z");

/** The run's counters as stored, and the same counted from its task instances' states by SQL. */
export interface RunCounts {
  liveTasks: number;
  failedTasks: number;
  /** Task instances per state, read from task_instances. */
  byState: Record<string, number>;
}

export interface RunCountsAdapter {
  store: Store;
  counts(runId: string): Promise<RunCounts>;
  /** Sets one task instance's state directly (every state the schema allows, not only those the port reaches). */
  setState(runId: string, taskId: string, state: string): Promise<void>;
  close(): Promise<void>;
}

const recount = (byState: Record<string, number>, states: readonly string[]) => states.reduce((n, s) => n + (byState[s] ?? 0), 0);

type Op =
  | { kind: "claim"; run: 0 | 1; limit: number }
  | { kind: "finish"; pick: number; outcome: "success" | "failed" | "retry" | "skipped" | "rescheduled" }
  | { kind: "lose"; pick: number; retry: boolean }
  | { kind: "rerun"; run: 0 | 1; which: "all" | "one" | "drop" }
  | { kind: "byHand"; run: 0 | 1; task: number; state: "success" | "failed" | "skipped" };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("claim" as const), run: fc.constantFrom(0 as const, 1 as const), limit: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ kind: fc.constant("claim" as const), run: fc.constantFrom(0 as const, 1 as const), limit: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ kind: fc.constant("finish" as const), pick: fc.nat(), outcome: fc.constantFrom("success" as const, "failed" as const, "retry" as const, "skipped" as const, "rescheduled" as const) }),
  fc.record({ kind: fc.constant("finish" as const), pick: fc.nat(), outcome: fc.constantFrom("success" as const, "success" as const, "failed" as const) }),
  fc.record({ kind: fc.constant("lose" as const), pick: fc.nat(), retry: fc.boolean() }),
  fc.record({ kind: fc.constant("rerun" as const), run: fc.constantFrom(0 as const, 1 as const), which: fc.constantFrom("all" as const, "one" as const, "drop" as const) }),
  fc.record({ kind: fc.constant("byHand" as const), run: fc.constantFrom(0 as const, 1 as const), task: fc.nat(), state: fc.constantFrom("success" as const, "failed" as const, "skipped" as const) }),
);

const EDGES: [string, string][] = [["a", "b"], ["b", "c"], ["a", "d"]];
const TASKS: [string[], string[]] = [["a", "b", "c", "d"], ["x", "y", "z"]];

/**
 * Every run keeps a count of its live and of its failing task instances (migration 17), which
 * each finish reads instead of the run's rows. After any sequence of claims, finishes (success,
 * failure, retry, skip, reschedule), lost leases, reruns and settles by hand, the counters must
 * equal a recount of the task instances, and the run must be live exactly while something in it
 * is, and failed exactly when something failed.
 */
export function describeRunCounts(adapter: string, open: () => Promise<RunCountsAdapter>, options: { runs: number }) {
  describe(`${adapter}: a run's counts of live and failing task instances`, () => {
    it("agree with a recount after random claims, finishes, lost leases, reruns and settles by hand", async () => {
      const a = await open();
      const { store } = a;
      let iteration = 0;
      try {
        await store.savePipelineVersion({ pipelineId: "p", version: "v1", definition: {}, edges: EDGES.map(([parent, child]) => ({ parent, child })), createdAt: T0 });
        await fc.assert(
          fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
            iteration++;
            const day = (offset: number) => new Date(Date.UTC(2020, 0, 1) + (iteration * 2 + offset) * 86_400_000).toISOString().slice(0, 10);
            const runIds: [string, string] = [`p@${day(0)}`, `p@${day(1)}`];
            await store.createRunIfAbsent(newRun({ runId: runIds[0], businessDate: day(0), tasks: tasksOf([...TASKS[0]], EDGES, { a: { maxTries: 2 }, b: { maxTries: 2 } }) }));
            await store.createRunIfAbsent(newRun({ runId: runIds[1], businessDate: day(1), tasks: tasksOf([...TASKS[1]], [], { x: { maxTries: 3 } }) }));
            let running: ClaimedAttempt[] = [];
            let now = T0;
            for (const o of ops) {
              now += 1_000;
              if (o.kind === "claim") {
                running.push(...(await store.claimReady({ workerId: "w", pid: 1, limit: o.limit, now, leaseMs: 500, runId: runIds[o.run], logDir: "/logs" })));
              } else if ((o.kind === "finish" || o.kind === "lose") && running.length > 0) {
                const [attempt] = running.splice(o.pick % running.length, 1);
                if (o.kind === "lose") await store.loseAttempt({ attemptId: attempt!.attemptId, now, retryAt: o.retry ? now : null });
                else {
                  await store.finishAttempt({
                    attemptId: attempt!.attemptId, workerId: "w", now, exitCode: null, summary: null,
                    outcome: o.outcome === "retry" ? "failed" : o.outcome, retryable: o.outcome === "retry", retryAt: o.outcome === "retry" ? now : o.outcome === "rescheduled" ? now : null,
                    errorClass: o.outcome === "failed" || o.outcome === "retry" ? ErrorClass.TaskFailed : null, errorMessage: null,
                    skipReason: o.outcome === "skipped" ? "nothing to do" : null,
                  });
                }
              } else if (o.kind === "rerun") {
                // "drop": a graph without the run's last task removes its instance (and "all" adds it back).
                const tasks = o.which === "drop" ? TASKS[o.run].slice(0, -1) : [...TASKS[o.run]];
                await store.rerun({
                  runId: runIds[o.run], graphVersion: "v1", params: {}, at: now,
                  tasks: o.run === 0 ? tasksOf(tasks, EDGES.filter(([, c]) => tasks.includes(c))) : tasksOf(tasks),
                  taskIds: o.which === "one" ? [tasks[1]!] : undefined,
                }).catch(refusedOnly);
              } else if (o.kind === "byHand") {
                const tasks = TASKS[o.run];
                const request = { runId: runIds[o.run], taskId: tasks[o.task % tasks.length]!, reason: "test", at: now };
                await (o.state === "skipped" ? store.skipTask(request) : store.markTask({ ...request, state: o.state })).catch(refusedOnly);
              }
              for (const runId of runIds) {
                const c = await a.counts(runId);
                expect({ live: c.liveTasks, failed: c.failedTasks }).toEqual({ live: recount(c.byState, LIVE_TASK_STATES), failed: recount(c.byState, FAILING_TASK_STATES) });
                const run = (await store.getRun(runId))!;
                expect(["queued", "running"].includes(run.state)).toBe(c.liveTasks > 0);
                if (c.liveTasks === 0) expect(run.state).toBe(c.failedTasks > 0 ? "failed" : "success");
              }
              // A lost or finished attempt is no longer running; a claim of a rerun run starts afresh.
              const stillRunning = new Set<string>();
              for (const runId of runIds) for (const t of await store.listTaskInstances(runId)) if (t.state === "running") stillRunning.add(`${runId} ${t.taskId} ${t.tryNumber}`);
              running = running.filter((r) => stillRunning.has(`${r.runId} ${r.taskId} ${r.tryNumber}`));
            }
          }),
          { numRuns: options.runs },
        );
      } finally {
        await a.close();
      }
    });

    it("count exactly core's live and failing states, whichever state a task instance is put in", async () => {
      const a = await open();
      try {
        await a.store.createRunIfAbsent(newRun({ tasks: tasksOf(["a"]) }));
        for (const state of TASK_STATES) {
          await a.setState("p@2026-09-01", "a", state);
          const c = await a.counts("p@2026-09-01");
          expect({ state, live: c.liveTasks, failed: c.failedTasks }).toEqual({
            state,
            live: (LIVE_TASK_STATES as readonly string[]).includes(state) ? 1 : 0,
            failed: (FAILING_TASK_STATES as readonly string[]).includes(state) ? 1 : 0,
          });
        }
      } finally {
        await a.close();
      }
    });
  });
}

function refusedOnly(error: unknown): void {
  if (!(error instanceof StoreConflictError)) throw error;
}
