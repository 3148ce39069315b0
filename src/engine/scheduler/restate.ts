import { runIdFor } from "../../core/model/run-id.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import { decideRestatements, restatedTasks, restateRoom, restateWindow, type RestateDecision } from "../../core/policy/restate.ts";
import { formatInstant } from "../../core/time/dates.ts";
import type { Interval } from "../../core/time/interval.ts";
import type { RunRecord, Store } from "../../store/port.ts";
import { refusalOf } from "../records/store-refusals.ts";
import { taskInstancesOf, latestCode } from "../records/pipeline-records.ts";
import type { EngineEvents } from "../events/engine-events.ts";

export interface RestateEnvironment {
  store: Store;
  /** Frozen periods of the project (each pipeline adds its own). */
  frozen: readonly FrozenPeriod[];
  /** Records the pipeline's graph version before a run is reset to it. */
  saveVersion: (pipeline: Pipeline) => Promise<void>;
  events: EngineEvents;
}

/**
 * The scheduler's restatement step for one pipeline with `restate: { last: k }`: finds the
 * newest interval the schedule has run (the head, from the schedule cursor), reads the runs of
 * the k intervals before it, asks the core decision what to do with each, and carries it out:
 * restated runs are the existing runs reset (try numbers continue), refusals are noted once per
 * head. Returns how many runs it made live again.
 */
export async function restateTrailingWindow(env: RestateEnvironment, pipeline: Pipeline, now: number): Promise<number> {
  const policy = pipeline.restate;
  if (!policy || pipeline.schedule.kind === "manual") return 0;
  const { store } = env;
  const state = await store.pipelineState(pipeline.id, now);
  if (state.paused || state.scheduleCursor === null) return 0;
  const head = pipeline.schedule.intervalAt(state.scheduleCursor - 1);
  const headRun = await store.getRun(runIdFor(pipeline.id, head));
  // The newest interval was passed over (frozen, catch-up "latest"): no scheduled run, no window.
  if (!headRun) return 0;
  const window = restateWindow(pipeline.schedule, head, policy.last, pipeline.start);
  if (window.length === 0) return 0;
  const runs = await windowRuns(store, pipeline.id, window, head);
  const firesAt = pipeline.schedule.firesAt(head);
  const decisions = decideRestatements({
    head: { businessDate: head.businessDate, firesAt, live: headRun.state === "queued" || headRun.state === "running" },
    window: runs,
    frozen: [...pipeline.frozen, ...env.frozen],
    liveBackfills: (await store.listBackfills({ live: true })).filter((b) => b.pipelineId === pipeline.id),
    room: restateRoom(pipeline.maxActiveRuns, await store.countLiveRuns(pipeline.id)),
    formatTime: (ms) => formatInstant(ms, pipeline.schedule.timezone),
  });
  const byId = new Map(runs.map((r) => [r.runId, r]));
  let started = 0;
  for (const decision of decisions) {
    if (decision.action === "refuse") await refuse(env, pipeline, head, decision, now);
    if (decision.action === "start") started += await restate(env, pipeline, byId.get(decision.runId)!, head, firesAt, now);
  }
  return started;
}

/** The runs of exactly the window's intervals (a manual run over other bounds is not one of them). */
async function windowRuns(store: Store, pipelineId: string, window: readonly Interval[], head: Interval): Promise<RunRecord[]> {
  const wanted = new Set(window.map((i) => `${i.start}/${i.end}`));
  const { runs } = await store.ledger(pipelineId, window.at(-1)!.start, head.start);
  return runs.filter((r) => wanted.has(`${r.intervalStart}/${r.intervalEnd}`));
}

async function restate(env: RestateEnvironment, pipeline: Pipeline, run: RunRecord, head: Interval, firesAt: number, now: number): Promise<number> {
  const { store } = env;
  const states = new Map((await store.listTaskInstances(run.runId)).map((t) => [t.taskId, t.state]));
  const taskIds = restatedTasks([...pipeline.tasks.values()].map((t) => ({ taskId: t.id, restate: t.restate })), states);
  const reason = `restating the last ${pipeline.restate!.last} interval(s) after ${head.businessDate} ran`;
  await env.saveVersion(pipeline);
  // Another scheduler restated it first, or it became live in between: nothing to do now.
  const refused = await refusalOf(() => store.rerun({
    runId: run.runId,
    graphVersion: pipeline.version,
    tasks: taskInstancesOf(pipeline),
    taskIds: taskIds ?? undefined,
    params: run.params,
    at: now,
    restate: { triggeredBy: "scheduler", reason, endedBefore: firesAt },
    ...latestCode(pipeline),
  }));
  if (refused !== null) {
    env.events.emit("restate:refused", { pipelineId: pipeline.id, runId: run.runId, reason: `not restated: ${refused}` });
    return 0;
  }
  await store.appendAudit({
    at: now, actor: "scheduler", action: "restate", pipelineId: pipeline.id, runId: run.runId, reason, graphVersion: pipeline.version,
    details: { businessDate: run.businessDate, after: head.businessDate, restatement: run.restateCount + 1, tasks: taskIds ?? "all" },
  });
  env.events.emit("restate:started", { pipelineId: pipeline.id, runId: run.runId, businessDate: run.businessDate, after: head.businessDate, restatement: run.restateCount + 1 });
  return 1;
}

async function refuse(env: RestateEnvironment, pipeline: Pipeline, head: Interval, decision: RestateDecision, now: number): Promise<void> {
  if (!(await env.store.noteRestateRefusal({ runId: decision.runId, headStart: head.start, note: decision.why }))) return;
  await env.store.appendAudit({
    at: now, actor: "scheduler", action: "restate-refused", pipelineId: pipeline.id, runId: decision.runId, reason: decision.why,
    graphVersion: pipeline.version, details: { businessDate: decision.businessDate, after: head.businessDate },
  });
  env.events.emit("restate:refused", { pipelineId: pipeline.id, runId: decision.runId, reason: decision.why });
}
