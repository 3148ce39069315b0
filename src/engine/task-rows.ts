import type { AttemptRecord, TaskInstanceRecord } from "../store/port.ts";
import type { EngineContext } from "./engine-context.ts";
import { inTaskOrder, type RunReads } from "./run-reads.ts";

/**
 * A run's task instances one row per task, as its page and on-call show them: a mapped task is
 * one row with its instances counted by state (kept on its own row), never its instances, so a
 * run that maps 100,000 items reads as few rows as one that maps none.
 */
export class TaskRows {
  readonly #e: Pick<EngineContext, "store" | "catalog">;
  readonly #runs: RunReads;

  constructor(context: Pick<EngineContext, "store" | "catalog">, runs: RunReads) {
    this.#e = context;
    this.#runs = runs;
  }

  /** In the pipeline's task order when it is loaded. */
  async ofRun(runId: string): Promise<TaskInstanceRecord[]> {
    const run = await this.#runs.run(runId);
    const rows = await this.#e.store.taskRowsOfRun(runId);
    const pipeline = this.#e.catalog.get(run.pipelineId);
    return pipeline ? inTaskOrder(pipeline, rows) : rows;
  }

  /** Their attempts, oldest first: a mapped task's own (the one that found its list), none of its instances'. */
  async attempts(runId: string): Promise<AttemptRecord[]> {
    await this.#runs.run(runId);
    return this.#e.store.attemptsOfTaskRows(runId);
  }
}
