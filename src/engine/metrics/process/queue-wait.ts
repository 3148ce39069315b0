import { Histogram } from "prom-client";
import { ATTEMPT_BUCKETS, type ProcessMetric } from "./process-metric.ts";

/** `idem_queue_wait_seconds`: from ready until claimed, from `attempt:claimed` (a claim carries when its task instance became ready). */
export const queueWait: ProcessMetric = (registry, events) => {
  const waits = new Histogram<"pipeline" | "task">({
    name: "idem_queue_wait_seconds",
    help: "How long attempts waited from ready (queued, or their retry due) until this worker claimed them, by pipeline and task",
    labelNames: ["pipeline", "task"],
    buckets: ATTEMPT_BUCKETS,
    registers: [registry],
  });
  return events.on("attempt:claimed", (c) => {
    if (c.queueWaitMs !== null) waits.observe({ pipeline: c.pipelineId, task: c.taskId }, c.queueWaitMs / 1000);
  });
};
