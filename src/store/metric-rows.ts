import type { IncidentCount, PoolQueue, RunStateCount, TaskStateCount } from "./port.ts";
import type { Row } from "./row-mappers.ts";

/** The metric counts' rows, the same in both adapters. */
export const toRunStateCount = (r: Row): RunStateCount => ({ pipelineId: r.pipeline_id, state: r.state, count: Number(r.n) });

export const toTaskStateCount = (r: Row): TaskStateCount => ({ pipelineId: r.pipeline_id, taskId: r.task_id, state: r.state, count: Number(r.n) });

export const toPoolQueue = (r: Row): PoolQueue => ({ pool: r.pool ?? null, queued: Number(r.n), oldestQueuedAt: Number(r.oldest) });

export const toIncidentCount = (r: Row): IncidentCount => ({
  kind: r.kind,
  pipelineId: r.pipeline_id ?? null,
  acknowledged: r.acknowledged === true || r.acknowledged === 1,
  ackUntil: r.ack_until === null || r.ack_until === undefined ? null : Number(r.ack_until),
  count: Number(r.n),
});
