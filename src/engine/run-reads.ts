import { NotFoundError } from "../core/model/errors.ts";
import type { Pipeline } from "../core/pipeline/types.ts";
import type { RunState, TriggerKind } from "../core/model/states.ts";
import type { AttemptRecord, ExternalJobRecord, AuditEntry, RunRecord, TaskInstanceRecord, TaskStateCell } from "../store/port.ts";
import type { EngineContext } from "./engine-context.ts";
import type { Page, Pages } from "./pages.ts";

/** Reads of runs, their task instances and attempts, and the audit log, checked against the loaded pipelines. */
export class RunReads {
  readonly #e: Pick<EngineContext, "store" | "catalog" | "pipelinesLoaded" | "pipeline">;
  readonly #pages: Pages;

  constructor(context: Pick<EngineContext, "store" | "catalog" | "pipelinesLoaded" | "pipeline">, pages: Pages) {
    this.#e = context;
    this.#pages = pages;
  }

  async runs(pipelineId: string, limit: number): Promise<RunRecord[]> {
    if (this.#e.pipelinesLoaded) this.#e.pipeline(pipelineId);
    return this.#e.store.listRuns({ pipelineId, limit });
  }

  async run(runId: string): Promise<RunRecord> {
    const run = await this.#e.store.getRun(runId);
    if (!run) throw new NotFoundError("run", `unknown run "${runId}" (run ids look like shop_orders@2026-09-01)`);
    return run;
  }

  /** A run's task instances, in the pipeline's task order when the pipeline is loaded. */
  async taskInstances(runId: string): Promise<TaskInstanceRecord[]> {
    const run = await this.run(runId);
    const tasks = await this.#e.store.listTaskInstances(runId);
    const pipeline = this.#e.catalog.get(run.pipelineId);
    return pipeline ? inTaskOrder(pipeline, tasks) : tasks;
  }

  /** One task instance (a mapped instance by its id, task[key]), without reading the run's others. */
  async taskInstance(runId: string, taskId: string): Promise<TaskInstanceRecord> {
    await this.run(runId);
    const ti = await this.#e.store.getTaskInstance(runId, taskId);
    if (!ti) throw new NotFoundError("task", `run ${runId} has no task "${taskId}"`);
    return ti;
  }

  async attempts(runId: string, taskId?: string): Promise<AttemptRecord[]> {
    await this.run(runId);
    return this.#e.store.listAttempts(runId, taskId);
  }

  /** The remote jobs an external task submitted, oldest first: handle, state, link. */
  async externalJobs(runId: string, taskId?: string): Promise<ExternalJobRecord[]> {
    await this.run(runId);
    return this.#e.store.listExternalJobs(runId, taskId);
  }

  /**
   * One page of a pipeline's runs, newest business date first. `after` is the interval start of
   * the last run of the previous page; `next` is the same for this page, null on the last one.
   */
  async runsPage(
    pipelineId: string,
    query: { states?: readonly RunState[]; triggers?: readonly TriggerKind[]; codeVersion?: string; fromDate?: string; toDate?: string; limit: number; after?: number },
  ): Promise<Page<RunRecord, number>> {
    return this.#pages.runs(pipelineId, query);
  }

  /**
   * A grid: the pipeline's runs whose business dates lie in [fromDate, toDate] (newest first, at
   * most `limit`) and all their task instances, in two queries.
   */
  async taskGrid(pipelineId: string, range: { fromDate: string; toDate: string; limit?: number }): Promise<{ runs: RunRecord[]; tasks: TaskInstanceRecord[] }> {
    const { items: runs } = await this.runsPage(pipelineId, { fromDate: range.fromDate, toDate: range.toDate, limit: range.limit ?? 1000 });
    return { runs, tasks: await this.#e.store.taskInstancesOfRuns(runs.map((r) => r.runId)) };
  }

  /** The task instances of several runs at once (a grid's cells). */
  async taskInstancesOfRuns(runIds: readonly string[]): Promise<TaskInstanceRecord[]> {
    return this.#e.store.taskInstancesOfRuns(runIds);
  }

  /** Only the state of each task instance of these runs (a grid's cells), in one query. */
  async taskStatesOfRuns(runIds: readonly string[]): Promise<TaskStateCell[]> {
    return this.#e.store.taskStatesOfRuns(runIds);
  }

  /** A run's audit trail, newest first (every restatement and refusal, clear, mark, ...); `actions` narrows it. */
  async runAudit(runId: string, query: { actions?: readonly string[]; limit?: number }): Promise<AuditEntry[]> {
    await this.run(runId);
    return this.#e.store.auditOfRun({ runId, actions: query.actions, limit: query.limit ?? 100 });
  }

  async audit(query: { pipelineId?: string; limit?: number }): Promise<AuditEntry[]> {
    if (query.pipelineId && this.#e.pipelinesLoaded) this.#e.pipeline(query.pipelineId);
    return this.#e.store.listAudit(query);
  }

  /** One page of the audit log, newest first; `from` and `to` are instants or dates (a date is midnight UTC). */
  async auditPage(query: { pipelineId?: string; actor?: string; action?: string; from?: string; to?: string; limit: number; after?: number }): Promise<Page<AuditEntry, number>> {
    return this.#pages.audit(query);
  }
}

/** Task instances in the order the pipeline declares its tasks; tasks it no longer has last, by id. */
export function inTaskOrder(pipeline: Pipeline, tasks: TaskInstanceRecord[]): TaskInstanceRecord[] {
  const order = [...pipeline.tasks.keys()];
  const rank = (id: string) => (order.indexOf(id) + 1 || order.length + 1);
  return [...tasks].sort((a, b) => rank(a.taskId) - rank(b.taskId) || a.taskId.localeCompare(b.taskId));
}
