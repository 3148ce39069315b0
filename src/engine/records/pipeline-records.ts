import { runIdFor } from "../../core/model/run-id.ts";
import type { TriggerKind } from "../../core/model/states.ts";
import type { Params, Pipeline } from "../../core/pipeline/types.ts";
import type { Interval } from "../../core/time/interval.ts";
import type { NewRun, NewTaskInstance, RunStore, SchedulingStore } from "../../store/port.ts";
import { recordFrozenPeriods } from "./frozen-records.ts";
import { codeOf } from "../project/code-of.ts";

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

/** Who or what asks for a new run, and why. */
export interface RunOrigin {
  trigger: TriggerKind;
  triggeredBy: string | null;
  reason: string | null;
  params?: Params;
  /** A scheduled run moves the pipeline's schedule cursor here, in the same transaction. */
  cursor?: number;
  backfillId?: string;
  /** The run holds only these tasks (a backfill of some tasks). */
  only?: ReadonlySet<string> | null;
}

/**
 * The one way a run is asked of the store, whoever asks (an operator, the schedule, a dataset,
 * a backfill): the current graph version and its task instances, for an interval. A backfill's
 * item names its run already, so it may pass the run id with the bounds.
 */
export function newRun(
  pipeline: Pipeline,
  interval: Interval | { runId: string; start: number; end: number; businessDate: string },
  origin: RunOrigin,
  createdAt: number,
): NewRun {
  return {
    ...(origin.backfillId === undefined ? {} : { backfillId: origin.backfillId }),
    ...(origin.cursor === undefined ? {} : { cursor: origin.cursor }),
    runId: "runId" in interval ? interval.runId : runIdFor(pipeline.id, interval),
    pipelineId: pipeline.id,
    intervalStart: interval.start,
    intervalEnd: interval.end,
    businessDate: interval.businessDate,
    graphVersion: pipeline.version,
    codeVersion: codeOf(pipeline)?.codeVersion ?? null,
    trigger: origin.trigger,
    triggeredBy: origin.triggeredBy,
    reason: origin.reason,
    params: origin.params ?? {},
    tasks: taskInstancesOf(pipeline, origin.only ?? null),
    createdAt,
  };
}

/**
 * Records the pipeline's graph version and its code version (no-ops when the store has them) and, when its
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
  const code = codeOf(pipeline);
  if (code) {
    await store.saveCodeVersion({
      pipelineId: pipeline.id, codeVersion: code.codeVersion, graphVersion: pipeline.version, file: code.file,
      location: code.location, packages: code.packages, createdAt: at, createdBy: actor,
    });
  }
  await recordFrozenPeriods(store, { pipelineId: pipeline.id, periods: pipeline.frozen, graphVersion: pipeline.version, actor, at });
}

/**
 * What a rerun made by the schedule (a restatement, upstream data published again) writes of the
 * code: the run moves to the pipeline's code as loaded, with its graph. Nothing for a pipeline
 * with no bundle, whose runs have none.
 */
export function latestCode(pipeline: Pipeline): { codeVersion?: string } {
  const code = codeOf(pipeline);
  return code ? { codeVersion: code.codeVersion } : {};
}
