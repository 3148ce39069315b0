import { attemptDuration } from "./attempt-duration.ts";
import { claimDuration } from "./claim-duration.ts";
import type { ProcessMetric } from "./process-metric.ts";
import { queueWait } from "./queue-wait.ts";
import { schedulerTicks } from "./scheduler-ticks.ts";

/** The process's own metrics, each a subscriber to the engine's events (one file each). */
export const PROCESS_METRICS: readonly ProcessMetric[] = [attemptDuration, queueWait, claimDuration, schedulerTicks];
