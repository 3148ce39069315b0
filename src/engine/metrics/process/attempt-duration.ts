import { Histogram } from "prom-client";
import { ATTEMPT_BUCKETS, type ProcessMetric } from "./process-metric.ts";

/** `idem_attempt_duration_seconds`: how long attempts' task code ran, from `attempt:finished`. */
export const attemptDuration: ProcessMetric = (registry, events) => {
  const attempts = new Histogram<"pipeline" | "task" | "state">({
    name: "idem_attempt_duration_seconds",
    help: "How long attempts' task code ran in this worker, by pipeline, task and the task instance's state after it",
    labelNames: ["pipeline", "task", "state"],
    buckets: ATTEMPT_BUCKETS,
    registers: [registry],
  });
  return events.on("attempt:finished", (f) => attempts.observe({ pipeline: f.pipelineId, task: f.taskId, state: f.taskState ?? "unknown" }, f.durationMs / 1000));
};
