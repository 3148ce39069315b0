import { DataError, DefinitionError } from "../../core/model/errors.ts";
import { expandItems, keyedChain, mappedTaskId, type MappedItem } from "../../core/policy/fan-out.ts";
import type { ExternalTask, FunctionTask, Pipeline, Summary, TaskContext, TaskMap } from "../../core/pipeline/types.ts";
import { keysOfMapped, mapOf } from "../../core/pipeline/kind.ts";

/** A task that may be mapped (a function or an external task), with its list. */
type MappedTask = (FunctionTask | ExternalTask) & { map: TaskMap };
import type { AttemptFinish } from "../../store/port.ts";

/**
 * A mapped task's first step: the task code that finds its list (the `items` function, or a
 * field of an upstream task's summary) and expands it by core's expandItems, where task code
 * runs (a task host, or this process). The list travels back to the worker under a key no
 * task's summary has, and is recorded as the finish's `map`, never as a summary.
 */
const MAPPED_ITEMS = "idem.mappedItems";

export function expansionCode(task: MappedTask) {
  const map = task.map;
  return async (ctx: Omit<TaskContext, "signal">): Promise<Summary> => {
    const place = { pipelineId: ctx.pipelineId, taskId: ctx.taskId, businessDate: ctx.businessDate };
    const where = `pipeline ${place.pipelineId}, task ${place.taskId}, business date ${place.businessDate}`;
    let list: unknown;
    if (typeof map.items === "function") {
      list = await map.items(ctx as TaskContext);
    } else if ("keysOf" in map.items) {
      // Its instances were made with its upstream's; only a rerun of this task alone gets here.
      throw new DefinitionError(`${where}: it is mapped by key over ${map.items.keysOf} and expanded with it: rerun ${map.items.keysOf}`);
    } else {
      const summary = ctx.upstream[map.items.task];
      if (!summary) throw new DataError(`${where}: task ${map.items.task} returned no summary to map over`);
      list = summary[map.items.field];
      if (list === undefined) throw new DataError(`${where}: task ${map.items.task}'s summary has no field ${JSON.stringify(map.items.field)} to map over`);
    }
    const expansion = expandItems(list, { keyOf: map.key ?? undefined, maxItems: map.maxItems }, place);
    if ("problem" in expansion) {
      throw expansion.problem.kind === "data" ? new DataError(expansion.problem.message) : new DefinitionError(expansion.problem.message);
    }
    ctx.log.info(`expanded into ${expansion.items.length} mapped instance(s)`);
    return { [MAPPED_ITEMS]: expansion.items };
  };
}

/**
 * The finish of a mapped task's first step that succeeded: its list as the finish's `map`,
 * and a summary that counts it. Null when the summary is not an expansion's.
 */
export function expansionFinish(pipeline: Pipeline, task: MappedTask, summary: Summary | null): Pick<AttemptFinish, "map" | "summary"> | null {
  const items = summary?.[MAPPED_ITEMS];
  if (!Array.isArray(items)) return null;
  const chained = keyedChain(pipeline.tasks, task.id);
  return {
    map: { items: items as MappedItem[], maxActive: task.map.maxActive, ...(chained.length > 0 ? { chained } : {}) },
    summary: JSON.stringify({ items: items.length }),
  };
}

/**
 * The upstream tasks whose summaries an attempt reads, each with the task instance to read it
 * from: a chained instance (mapped by key over a mapped task) reads its own key's instance of
 * that task, so `ctx.upstream.<task>` is what that key's upstream instance returned.
 */
export function upstreamInstances(task: { upstream: readonly string[]; kind: string; map?: TaskMap | null }, mapKey: string | null): { name: string; instance: string }[] {
  const over = mapKey !== null ? keysOfMapped(task) : null;
  return task.upstream.map((name) => ({ name, instance: name === over ? mappedTaskId(name, mapKey!) : name }));
}

/** Whether this claim is a mapped task's first step (its own task instance, not one of its instances). */
export function isExpansion(task: { kind: string; map?: TaskMap | null }, mapKey: string | null): task is MappedTask {
  return mapOf(task) !== null && mapKey === null;
}
