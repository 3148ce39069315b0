import { ArgumentError, NotFoundError } from "../core/model/errors.ts";
import { TASK_STATES, type TaskState } from "../core/model/states.ts";
import type { MappedInstanceRecord } from "../store/port.ts";
import type { EngineContext } from "./engine-context.ts";
import type { Page } from "./pages.ts";
import type { RunReads } from "./run-reads.ts";

/** At most this many instances in one page. */
export const MAX_MAPPED_PAGE = 10_000;

/**
 * A mapped task's instances in a run, a page at a time in key order (keyset over the key, never
 * an offset): what `idem tasks --mapped` and the API list. `after` is the last key of the page
 * before; `next` the same for this page, null on the last one.
 */
export class MappedInstances {
  readonly #e: Pick<EngineContext, "store" | "catalog">;
  readonly #runs: RunReads;

  constructor(context: Pick<EngineContext, "store" | "catalog">, runs: RunReads) {
    this.#e = context;
    this.#runs = runs;
  }

  async page(
    runId: string,
    taskId: string,
    query: { after?: string; keyPrefix?: string; states?: readonly string[]; limit: number },
  ): Promise<Page<MappedInstanceRecord, string>> {
    const run = await this.#runs.run(runId);
    if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_MAPPED_PAGE) {
      throw new ArgumentError("limit", (n) => `${n("limit")} must be a whole number from 1 to ${MAX_MAPPED_PAGE}, not ${query.limit}`);
    }
    const unknown = (query.states ?? []).filter((s) => !(TASK_STATES as readonly string[]).includes(s));
    if (unknown.length > 0) throw new ArgumentError("state", (n) => `${n("state")}: unknown state ${unknown.join(", ")} (${TASK_STATES.join(", ")})`);
    // Checked against the pipeline when it is loaded: reading the run's task instances would cost O(its instances).
    const pipeline = this.#e.catalog.get(run.pipelineId);
    if (pipeline && !pipeline.tasks.has(taskId)) throw new NotFoundError("task", `pipeline ${run.pipelineId} has no task "${taskId}"`);
    const items = await this.#e.store.pageMappedInstances({
      runId, taskId, afterKey: query.after, keyPrefix: query.keyPrefix, states: query.states as TaskState[] | undefined, limit: query.limit,
    });
    return { items, next: items.length === query.limit ? items.at(-1)!.key : null };
  }
}
