import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import { TaskSkipped } from "../../core/pipeline/skip.ts";
import type { Pipeline, Summary, TaskContext, WatermarkAccess } from "../../core/pipeline/types.ts";
import { toZoned } from "../../core/time/dates.ts";
import type { ClaimedAttempt } from "../../store/port.ts";
import type { AttemptLog } from "./attempt-log.ts";
import type { AttemptConnections } from "../connections/connections.ts";

/** What task code sees of its attempt, built the same way in the worker and in a task host. */
export function buildContext(
  pipeline: Pipeline,
  claim: ClaimedAttempt,
  log: AttemptLog,
  projectFrozen: readonly FrozenPeriod[],
  watermarks: WatermarkAccess,
  upstream: Record<string, Summary>,
  connections: AttemptConnections,
  traceparent: string | null,
): Omit<TaskContext, "signal"> {
  const timezone = pipeline.schedule.timezone;
  let interval: TaskContext["interval"] | undefined;
  return {
    runId: claim.runId,
    pipelineId: claim.pipelineId,
    taskId: claim.taskId,
    businessDate: claim.businessDate,
    // Built on first read: two zoned date-times cost more than the rest of a no-op task's start.
    get interval() {
      return (interval ??= { start: toZoned(claim.intervalStart, timezone), end: toZoned(claim.intervalEnd, timezone) });
    },
    tryNumber: claim.tryNumber,
    trigger: claim.trigger,
    frozen: [...pipeline.frozen, ...projectFrozen],
    watermarks,
    params: { ...pipeline.params, ...claim.params },
    upstream,
    traceparent,
    connection: (name: string) => connections.get(name),
    log: log.logger(),
    skip(reason: string): never {
      throw new TaskSkipped(reason);
    },
  };
}
