import type { Pipeline } from "../core/pipeline/types.ts";
import { formatInstant } from "../core/time/dates.ts";
import type { Interval } from "../core/time/interval.ts";
import type { Store, TaskInstanceRecord } from "../store/port.ts";
import { maxActiveHoldReason, parseMappedTaskId } from "../core/policy/fan-out.ts";

export interface WhyContext {
  store: Store;
  now: number;
  /** A worker seen within this long counts as alive. */
  workerAliveMs: number;
  maxActiveTasks?: number;
  formatTime: (ms: number) => string;
}

/**
 * Says in words why a run, or one of its tasks, is not running: waiting on upstream, a pool
 * full (and who holds it), the pipeline's cap, paused, a retry time, no live worker.
 */
export async function explainRun(ctx: WhyContext, runId: string, taskId?: string): Promise<string[]> {
  const { store } = ctx;
  const run = await store.getRun(runId);
  if (!run) return [`there is no run ${runId}`];
  // One row per task (a mapped task with its counts), and the one instance asked for: never all of a mapped task's instances.
  const tasks = await store.taskRowsOfRun(runId);
  if (taskId && parseMappedTaskId(taskId) !== null) {
    const instance = await store.getTaskInstance(runId, taskId);
    if (instance) tasks.push(instance);
  }
  const lines: string[] = [];
  if (run.state === "success" || run.state === "failed") {
    lines.push(`run ${runId} is finished: ${run.state}${run.endedAt ? ` at ${ctx.formatTime(run.endedAt)}` : ""}`);
  }
  const state = await store.pipelineState(run.pipelineId, ctx.now);
  if (state.paused) {
    lines.push(`pipeline ${run.pipelineId} is paused${state.pausedBy ? ` by ${state.pausedBy}` : ""}${state.pausedNote ? `: ${state.pausedNote}` : ""}`);
  }
  const version = await store.getPipelineVersion(run.pipelineId, run.graphVersion);
  const upstreamOf = new Map<string, string[]>(
    ((version?.definition.tasks as { id: string; upstream: string[] }[] | undefined) ?? []).map((t) => [t.id, t.upstream]),
  );
  const byId = new Map(tasks.map((t) => [t.taskId, t]));
  // A mapped task's instances are told through it (there may be 100,000), unless one is asked for.
  const selected = taskId ? tasks.filter((t) => t.taskId === taskId) : tasks;
  if (taskId && selected.length === 0) return [`run ${runId} has no task ${taskId}`];

  const pools = new Map((await store.listPools()).map((p) => [p.name, p]));
  const workers = await store.listWorkers();
  const alive = workers.filter((w) => ctx.now - w.lastSeen <= ctx.workerAliveMs);
  let runningTasks = 0;
  for (const live of await store.listRuns({ pipelineId: run.pipelineId, states: ["running"] })) {
    for (const t of await store.taskRowsOfRun(live.runId)) runningTasks += t.mapped ? t.mapped.states.running : t.state === "running" ? 1 : 0;
  }
  const capped = ctx.maxActiveTasks !== undefined && runningTasks >= ctx.maxActiveTasks ? ctx.maxActiveTasks : null;

  for (const task of selected) {
    const line = await explainTask(ctx, task, taskId !== undefined, upstreamOf.get(task.taskId) ?? [], byId, pools, alive.length, capped);
    if (line) lines.push(`${task.taskId}: ${line}`);
  }
  if (lines.length === 0) lines.push(`run ${runId} is ${run.state}; nothing is holding it back`);
  return lines;
}

/**
 * Says in words why a run that does not exist yet is not there: its pipeline paused, its interval
 * not due, the pipeline's run cap reached, no scheduler running.
 */
export async function explainMissingRun(store: Store, pipeline: Pipeline, runId: string, interval: Interval, now: number): Promise<string[]> {
  const firesAt = pipeline.schedule.firesAt(interval);
  const state = await store.pipelineState(pipeline.id, now);
  const lines = [`run ${runId} does not exist yet`];
  if (state.paused) lines.push(`pipeline ${pipeline.id} is paused${state.pausedNote ? `: ${state.pausedNote}` : ""}`);
  if (firesAt > now) lines.push(`not due until ${formatInstant(firesAt, pipeline.schedule.timezone)}`);
  const live = await store.listRuns({ pipelineId: pipeline.id, states: ["queued", "running"], limit: 1000 });
  if (live.length >= pipeline.maxActiveRuns) {
    lines.push(`run cap reached: ${live.length} of ${pipeline.maxActiveRuns} runs active (${live.slice(0, 5).map((r) => r.runId).join(", ")}${live.length > 5 ? ", ..." : ""})`);
  }
  const lead = await store.getLead("scheduler");
  if (!lead || lead.expiresAt < now) lines.push("no scheduler is running: start a scheduler");
  return lines;
}

async function explainTask(
  ctx: WhyContext,
  task: TaskInstanceRecord,
  asked: boolean,
  upstream: string[],
  byId: Map<string, TaskInstanceRecord>,
  pools: Map<string, Awaited<ReturnType<Store["listPools"]>>[number]>,
  liveWorkers: number,
  maxActiveTasksReached: number | null,
): Promise<string | null> {
  switch (task.state) {
    case "success":
      return asked ? "succeeded" : null;
    case "failed": {
      const last = (await ctx.store.listAttempts(task.runId, task.taskId)).at(-1);
      return `failed after try ${task.tryNumber} of ${task.maxTries}${last?.errorMessage ? `: ${last.errorClass}: ${last.errorMessage}` : ""}`;
    }
    case "skipped":
    case "upstream_failed":
    case "removed":
      return `${task.state.replace("_", " ")}${task.reason ? `: ${task.reason}` : ""}`;
    case "scheduled": {
      if (task.mapped) {
        const { live, failing, total } = task.mapped;
        return `waiting for its mapped instances: ${live} of ${total} still to end${failing ? `, ${failing} failed` : ""}`;
      }
      const mappedTask = task.heldAt != null ? byId.get(parseMappedTaskId(task.taskId)?.taskId ?? "") : undefined;
      if (mappedTask?.mapped?.maxActive != null) {
        return `${maxActiveHoldReason(mappedTask.taskId, mappedTask.mapped.states, mappedTask.mapped.maxActive)} (eligible since ${ctx.formatTime(task.heldAt!)})`;
      }
      const waiting = upstream
        .map((id) => byId.get(id))
        .filter((t): t is TaskInstanceRecord => !!t && !["success", "failed", "skipped", "upstream_failed"].includes(t.state));
      return waiting.length
        ? `waiting on upstream ${waiting.map((t) => `${t.taskId} (${t.state.replace(/_/g, " ")})`).join(", ")}`
        : "waiting for its trigger rule to be evaluated";
    }
    case "up_for_retry": {
      const last = (await ctx.store.listAttempts(task.runId, task.taskId)).at(-1);
      return `retry at ${ctx.formatTime(task.nextTryAt!)} (try ${task.tryNumber} of ${task.maxTries} failed${last?.errorMessage ? `: ${last.errorMessage}` : ""})`;
    }
    case "up_for_reschedule": {
      const { job } = await ctx.store.externalJobOf(task.runId, task.taskId);
      if (job?.state !== "open") return `sensor condition not met; next poke at ${ctx.formatTime(task.nextTryAt!)}`;
      const held = job.heldSlots > 0 ? `, holding ${job.heldSlots} slot${job.heldSlots === 1 ? "" : "s"} of pool ${job.heldPool}` : "";
      return `waiting on its remote job (${job.adapter} ${job.handle}, submitted ${ctx.formatTime(job.submittedAt)}${held}); next poll at ${ctx.formatTime(task.nextTryAt!)}`;
    }
    case "running": {
      const last = (await ctx.store.listAttempts(task.runId, task.taskId)).at(-1);
      return `running try ${task.tryNumber} on worker ${last?.workerId ?? "?"} since ${ctx.formatTime(last?.startedAt ?? task.startedAt ?? ctx.now)}` +
        (last?.leaseExpiresAt ? `, lease until ${ctx.formatTime(last.leaseExpiresAt)}` : "");
    }
    case "queued": {
      const reasons: string[] = [];
      if (task.pool) {
        const pool = pools.get(task.pool);
        if (!pool) reasons.push(`pool ${task.pool} does not exist (create it with the slots it should have)`);
        else if (task.slots > pool.slots) reasons.push(`needs ${task.slots} slots but pool ${task.pool} has only ${pool.slots}`);
        else if (pool.used + task.slots > pool.slots) {
          const holders = pool.holders.map((h) => `${h.runId} ${h.taskId}${h.remote ? " (its remote job)" : ""}`).join(", ");
          reasons.push(`pool ${task.pool} full (${pool.used}/${pool.slots} slots, held by ${holders})`);
        }
      }
      if (maxActiveTasksReached !== null) reasons.push(`the pipeline's maxActiveTasks (${maxActiveTasksReached}) are all running`);
      if (liveWorkers === 0) reasons.push("no worker alive: start a worker");
      return reasons.length ? `queued; ${reasons.join("; ")}` : "queued, eligible: the next free worker slot takes it";
    }
  }
}
