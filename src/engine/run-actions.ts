import { ArgumentError, ConflictError, NotFoundError, UsageError } from "../core/model/errors.ts";
import { cannotSurvive, parseCodeChoice, rerunCode } from "./records/code-choice.ts";
import { pinnedCode } from "./project/pinned-code.ts";
import type { Params, Pipeline } from "../core/pipeline/types.ts";
import { assertDeclaredParams } from "../core/pipeline/params.ts";
import { reachable } from "../core/graph/dag.ts";
import { keyedChain, mappedTaskId, parseMappedTaskId } from "../core/policy/fan-out.ts";
import { mapOf } from "../core/pipeline/kind.ts";
import { keyLookup, keySelectorProblem } from "../core/policy/key-selector.ts";
import type { RunRecord, TaskInstanceRecord } from "../store/port.ts";
import { defaultActor, tellAudit, type Acting } from "./acting.ts";
import type { EngineContext } from "./engine-context.ts";
import type { FrozenPeriods } from "./frozen-periods.ts";
import { assertOwned, intervalForDate } from "./intervals.ts";
import { assertIntervalEnded } from "./manual-runs.ts";
import { newRun, taskInstancesOf } from "./records/pipeline-records.ts";
import { refusalsTranslated } from "./records/store-refusals.ts";
import type { RunReads } from "./run-reads.ts";

type Context = Pick<EngineContext, "store" | "clock" | "pipeline" | "audit" | "announce" | "events">;

/** An operator's actions on runs and task instances: trigger, clear, skip, mark. Every one is audited and wakes the scheduler and workers. */
export class RunActions {
  readonly #e: Context;
  readonly #frozen: FrozenPeriods;
  readonly #runs: RunReads;

  constructor(context: Context, frozen: FrozenPeriods, runs: RunReads) {
    this.#e = context;
    this.#frozen = frozen;
    this.#runs = runs;
  }

  /** A manual run for an interval, left to the scheduler's workers (running it in this process is `RunHere`). */
  async trigger(pipelineId: string, date: string, request: { openFrozen?: string; params?: Params } & Acting): Promise<RunRecord> {
    const { store, clock } = this.#e;
    const pipeline = this.#e.pipeline(pipelineId);
    assertDeclaredParams(pipeline, request.params);
    const interval = intervalForDate(pipeline, date);
    assertOwned(pipeline, interval);
    const now = clock.now();
    assertIntervalEnded(pipeline, interval, now);
    this.#frozen.assertNotFrozen(pipeline, interval.businessDate, request.openFrozen);
    const actor = request.actor ?? defaultActor();
    await this.#frozen.recordVersion(pipeline, actor, now);
    const { run, created } = await store.createRunIfAbsent(
      newRun(pipeline, interval, { trigger: "manual", triggeredBy: actor, reason: request.reason ?? null, params: request.params }, now),
    );
    if (!created) throw new ConflictError(`run ${run.runId} already exists (${run.state})`, { pipeline: pipelineId }, { action: "clear-run", runId: run.runId });
    tellAudit(request, await this.#e.audit(actor, "trigger", pipeline, run.runId, null, request.reason ?? null, { businessDate: interval.businessDate, openFrozen: request.openFrozen }));
    this.#e.announce();
    return run;
  }

  /**
   * Runs task instances again, keeping their history and continuing their try numbers: one
   * task (and, optionally, what is downstream or upstream of it), only the failed ones, or all.
   */
  async clear(
    runId: string,
    request: { taskId?: string; downstream?: boolean; upstream?: boolean; failedOnly?: boolean; reason: string; openFrozen?: string; code?: string } & Acting,
  ): Promise<TaskInstanceRecord[]> {
    const { store, clock } = this.#e;
    const run = await this.#runs.run(runId);
    const loaded = this.#e.pipeline(run.pipelineId);
    // Same code by default: a clear runs again what the run ran.
    const code = await rerunCode(run, loaded, parseCodeChoice(request.code, "same"));
    const pipeline = code.pipeline;
    const named = request.taskId ? parseMappedTaskId(request.taskId) : null;
    if (named) {
      // A key's clear always reaches what follows it, and only that.
      if (request.upstream || request.failedOnly) throw new UsageError(`clear ${request.taskId}: a key or key pattern goes with neither upstream nor failed-only`);
      return this.#clearKeys(run, pipeline, named, request);
    }
    const tasks = await store.listTaskInstances(runId);
    let chosen = new Set(tasks.map((t) => t.taskId));
    if (request.taskId) {
      if (!chosen.has(request.taskId)) throw new NotFoundError("task", `run ${runId} has no task "${request.taskId}"`);
      const nodes = [...pipeline.tasks.values()];
      chosen = new Set([
        request.taskId,
        ...(request.downstream ? reachable(nodes, request.taskId, "downstream") : []),
        ...(request.upstream ? reachable(nodes, request.taskId, "upstream") : []),
      ].filter((id) => chosen.has(id)));
    }
    if (request.failedOnly) {
      const failed = new Set(tasks.filter((t) => t.state === "failed" || t.state === "upstream_failed").map((t) => t.taskId));
      chosen = new Set([...chosen].filter((id) => failed.has(id)));
    }
    if (chosen.size === 0) throw new UsageError(`nothing to clear in run ${runId}${request.failedOnly ? " (no failed task)" : ""}`);
    if (code.move) {
      const own = run.codeVersion === null ? null : await pinnedCode.pipelineFor(run, loaded);
      const reasons = cannotSurvive(tasks, typeof own === "string" ? null : own, pipeline, chosen);
      if (reasons.length > 0) {
        throw new ArgumentError("code", (n) => `run ${runId} cannot move to the latest code (${code.to ?? "unbundled"}): ${reasons.join("; ")}; ${n("code")} same finishes it on its own code (${code.from ?? "none"})`);
      }
    }
    this.#frozen.assertNotFrozen(pipeline, run.businessDate, request.openFrozen);
    const actor = request.actor ?? defaultActor();
    await refusalsTranslated(() => store.rerun({
      runId, graphVersion: code.move ? pipeline.version : run.graphVersion, tasks: taskInstancesOf(pipeline), taskIds: [...chosen],
      params: run.params, at: clock.now(), ...(code.move ?? {}),
    }));
    tellAudit(request, await this.#e.audit(actor, "clear", loaded, runId, request.taskId ?? null, request.reason, {
      code: { choice: code.choice, from: code.from, to: code.to },
      tasks: [...chosen], downstream: !!request.downstream, upstream: !!request.upstream, failedOnly: !!request.failedOnly,
      ...(request.openFrozen ? { openFrozen: request.openFrozen } : {}),
    }));
    this.#e.announce();
    return this.#runs.taskInstances(runId);
  }

  /**
   * A clear naming `task[key]` or `task[glob]`: those keys, their chained instances and what
   * follows the mapped task, nothing else; answers the task instances it reset (the mapped task,
   * its chain, each key's instances, the tasks downstream).
   */
  async #clearKeys(run: RunRecord, pipeline: Pipeline, named: { taskId: string; key: string }, request: { reason: string; openFrozen?: string } & Acting): Promise<TaskInstanceRecord[]> {
    assertMappedTask(run, pipeline, named);
    this.#frozen.assertNotFrozen(pipeline, run.businessDate, request.openFrozen);
    const chain = keyedChain(pipeline.tasks, named.taskId).map((l) => l.taskId);
    const inChain = new Set(chain);
    const downstream = [...reachable([...pipeline.tasks.values()], named.taskId, "downstream")].filter((id) => !inChain.has(id));
    const involved = new Set([named.taskId, ...chain, ...downstream]);
    const { keys } = await refusalsTranslated(() => this.#e.store.clearKeys({
      runId: run.runId, taskId: named.taskId, selector: named.key, chain, downstream,
      tasks: taskInstancesOf(pipeline).filter((t) => involved.has(t.taskId)), at: this.#e.clock.now(),
    }));
    const actor = request.actor ?? defaultActor();
    tellAudit(request, await this.#e.audit(actor, "clear", this.#e.pipeline(run.pipelineId), run.runId, mappedTaskId(named.taskId, named.key), request.reason, {
      keys: firstKeys(keys), keyCount: keys.length, chain, downstream,
      ...(request.openFrozen ? { openFrozen: request.openFrozen } : {}),
    }));
    this.#e.announce();
    // What the clear reset, each read by its id: never the run's other instances.
    const ids = [named.taskId, ...chain, ...keys.flatMap((key) => [named.taskId, ...chain].map((t) => mappedTaskId(t, key))), ...downstream];
    const reset: TaskInstanceRecord[] = [];
    for (const id of ids) {
      const ti = await this.#e.store.getTaskInstance(run.runId, id);
      if (ti) reset.push(ti);
    }
    return reset;
  }

  async skip(runId: string, taskId: string, request: { reason: string } & Acting): Promise<TaskInstanceRecord> {
    const run = await this.#runs.run(runId);
    const actor = request.actor ?? defaultActor();
    const ti = await refusalsTranslated(() => this.#e.store.skipTask({ runId, taskId, reason: `skipped by ${actor}: ${request.reason}`, at: this.#e.clock.now() }));
    tellAudit(request, await this.#e.audit(actor, "skip", this.#e.pipeline(run.pipelineId), runId, taskId, request.reason, {}));
    await this.#tellIfEnded(run);
    this.#e.announce();
    return ti;
  }

  /**
   * Settles a task instance by hand; `task[glob]` every mapped instance the glob matches, in one
   * transaction (then the mapped task's own task instance is returned, and the audit entry lists
   * the keys).
   */
  async mark(runId: string, taskId: string, request: { state: "success" | "failed"; reason: string } & Acting): Promise<TaskInstanceRecord> {
    const run = await this.#runs.run(runId);
    const named = parseMappedTaskId(taskId);
    if (named) {
      const lookup = keyLookup(named.key);
      if (lookup.kind !== "key") return this.#markKeys(run, named, request);
      assertMappedTask(run, this.#e.pipeline(run.pipelineId), named);
      // `load[a\*b]` names the key a*b
      taskId = mappedTaskId(named.taskId, lookup.key);
    }
    const actor = request.actor ?? defaultActor();
    const ti = await refusalsTranslated(() => this.#e.store.markTask({ runId, taskId, state: request.state, reason: request.reason, at: this.#e.clock.now() }));
    tellAudit(request, await this.#e.audit(actor, `mark-${request.state}`, this.#e.pipeline(run.pipelineId), runId, taskId, request.reason, {}));
    await this.#tellIfEnded(run);
    this.#e.announce();
    return ti;
  }

  async #markKeys(run: RunRecord, named: { taskId: string; key: string }, request: { state: "success" | "failed"; reason: string } & Acting): Promise<TaskInstanceRecord> {
    const pipeline = this.#e.pipeline(run.pipelineId);
    assertMappedTask(run, pipeline, named);
    const { keys, marked } = await refusalsTranslated(() => this.#e.store.markKeys({
      runId: run.runId, taskId: named.taskId, selector: named.key, state: request.state, reason: request.reason, at: this.#e.clock.now(),
    }));
    const actor = request.actor ?? defaultActor();
    tellAudit(request, await this.#e.audit(actor, `mark-${request.state}`, pipeline, run.runId, mappedTaskId(named.taskId, named.key), request.reason, {
      keys: firstKeys(keys), keyCount: keys.length, markedCount: marked.length,
    }));
    await this.#tellIfEnded(run);
    this.#e.announce();
    return this.#runs.taskInstance(run.runId, named.taskId);
  }

  /** A skip or mark that settles a run's last live task instance ends the run here, with no attempt to say so. */
  async #tellIfEnded(before: RunRecord): Promise<void> {
    const after = await this.#runs.run(before.runId);
    if ((after.state === "success" || after.state === "failed") && after.endedAt !== null && after.endedAt !== before.endedAt) {
      this.#e.events.emit("run:ended", { pipelineId: after.pipelineId, runId: after.runId, state: after.state, by: "operator" });
    }
  }
}

/** The keys an audit entry lists: the first 100, then how many more. */
function firstKeys(keys: readonly string[]): string[] {
  return keys.length <= 100 ? [...keys] : [...keys.slice(0, 100), `... ${keys.length - 100} more`];
}

/** `task[...]` names instances of a mapped task of the run's pipeline, with brackets that can name keys. */
function assertMappedTask(run: RunRecord, pipeline: Pipeline, named: { taskId: string; key: string }): void {
  const problem = keySelectorProblem(mappedTaskId(named.taskId, named.key), named.key);
  if (problem !== null) throw new ArgumentError("taskId", () => problem);
  const task = pipeline.tasks.get(named.taskId);
  if (!task || !mapOf(task)) throw new NotFoundError("task", `run ${run.runId}: ${named.taskId} is not a mapped task of pipeline ${pipeline.id}`);
}
