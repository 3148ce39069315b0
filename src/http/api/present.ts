import type { Engine } from "../../engine/engine.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";

/** A pipeline in a list: what it is, its schedule in its zone, whether it is paused, its next run. */
export async function pipelineSummary(engine: Engine, pipeline: Pipeline) {
  const state = await engine.pipelineState(pipeline.id);
  const [next] = engine.preview(pipeline.id, 1);
  return {
    id: pipeline.id,
    description: pipeline.description,
    owner: pipeline.owner,
    tags: pipeline.tags,
    version: pipeline.version,
    schedule: { kind: pipeline.schedule.kind, description: pipeline.schedule.describe(), timezone: pipeline.schedule.timezone },
    paused: state.paused,
    pausedNote: state.pausedNote,
    pausedBy: state.pausedBy,
    pausedAt: state.pausedAt,
    nextRun: next ? { businessDate: next.interval.businessDate, intervalStart: next.interval.start, intervalEnd: next.interval.end, firesAt: next.firesAt } : null,
    datasets: [...new Set([...pipeline.tasks.values()].flatMap((t) => [...t.produces, ...(t.publishes ? [t.publishes] : [])]))],
  };
}

/** Everything about one pipeline: the summary, its tasks with their policies, frozen periods, promises and the definition. */
export async function pipelineDetail(engine: Engine, pipeline: Pipeline) {
  return {
    ...(await pipelineSummary(engine, pipeline)),
    start: pipeline.start,
    end: pipeline.end,
    catchup: pipeline.catchup,
    maxActiveRuns: pipeline.maxActiveRuns,
    maxActiveTasks: pipeline.maxActiveTasks,
    triggerOn: pipeline.triggerOn,
    params: pipeline.params,
    frozen: engine.frozenPeriods(pipeline.id),
    promises: pipeline.promises.map((p) => ({ dataset: p.dataset, deadline: p.deadline, slo: p.slo, timezone: p.timezone, owner: p.owner, notify: p.notify, completeness: p.completenessJson })),
    tasks: [...pipeline.tasks.values()].map((t) => ({
      id: t.id,
      kind: t.kind,
      description: t.description,
      upstream: t.upstream,
      downstream: t.downstream,
      triggerRule: t.policy.triggerRule,
      retries: t.policy.retries,
      timeoutMs: t.policy.timeoutMs,
      pool: t.policy.pool,
      slots: t.policy.slots,
      priority: t.policy.priority,
      produces: t.produces,
      publishes: t.publishes,
    })),
    definition: pipeline.definition,
  };
}

/** Nodes (tasks and the datasets they produce or publish) and edges, in topological order. */
export function pipelineGraph(pipeline: Pipeline) {
  const tasks = [...pipeline.tasks.values()];
  const datasets = [...new Set(tasks.flatMap((t) => [...t.produces, ...(t.publishes ? [t.publishes] : [])]))];
  return {
    nodes: [
      ...tasks.map((t) => ({ id: t.id, type: "task" as const, kind: t.kind, pool: t.policy.pool, slots: t.policy.slots })),
      ...datasets.map((d) => ({ id: `dataset:${d}`, type: "dataset" as const, dataset: d })),
    ],
    edges: [
      ...tasks.flatMap((t) => t.upstream.map((u) => ({ from: u, to: t.id, type: "task" as const }))),
      ...tasks.flatMap((t) => [...new Set([...t.produces, ...(t.publishes ? [t.publishes] : [])])].map((d) => ({ from: t.id, to: `dataset:${d}`, type: "produces" as const }))),
    ],
  };
}
