import type { Pipeline } from "../core/pipeline/types.ts";
import type { NewTaskInstance, RunStore, SchedulingStore } from "../store/port.ts";
import { recordFrozenPeriods } from "./frozen-records.ts";

/**
 * What the store needs to know of a pipeline's tasks to create or reset a run's instances.
 * With `only`, the run holds just those tasks; edges to tasks left out are ignored.
 */
export function taskInstancesOf(pipeline: Pipeline, only: ReadonlySet<string> | null = null): NewTaskInstance[] {
  const tasks = [...pipeline.tasks.values()].filter((t) => !only || only.has(t.id));
  return tasks.map((t) => ({
    taskId: t.id,
    hasUpstream: t.upstream.some((u) => !only || only.has(u)),
    triggerRule: t.policy.triggerRule,
    maxTries: t.policy.retries + 1,
    pool: t.policy.pool,
    slots: t.policy.slots,
    priority: t.policy.priority,
  }));
}

/**
 * Records the pipeline's graph version (a no-op when the store already has it) and, when its
 * frozen periods differ from those last recorded, the change in the audit log.
 */
export async function saveVersion(store: RunStore & SchedulingStore, pipeline: Pipeline, at: number, actor: string): Promise<void> {
  await store.savePipelineVersion({
    pipelineId: pipeline.id,
    version: pipeline.version,
    definition: pipeline.definition,
    edges: [...pipeline.tasks.values()].flatMap((t) => t.upstream.map((parent) => ({ parent, child: t.id }))),
    createdAt: at,
  });
  await recordFrozenPeriods(store, { pipelineId: pipeline.id, periods: pipeline.frozen, graphVersion: pipeline.version, actor, at });
}
