import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import { TaskSkipped } from "../../core/pipeline/skip.ts";
import type { MappedPages, Pipeline, Summary, TaskContext, WatermarkAccess } from "../../core/pipeline/types.ts";
import { toZoned } from "../../core/time/dates.ts";
import type { ClaimedAttempt } from "../../store/port.ts";
import { parseMappedTaskId } from "../../core/policy/fan-out.ts";
import type { AttemptLog } from "./attempt-log.ts";
import type { AttemptConnections } from "../connections/connections.ts";

/** `ctx.mapped` where no store is at hand (a runner called with none). */
export const NO_MAPPED_PAGES: MappedPages = () => Promise.reject(new Error("ctx.mapped: no state store to read mapped instances from"));

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
  mappedPages: MappedPages,
): Omit<TaskContext, "signal"> {
  const timezone = pipeline.schedule.timezone;
  let interval: TaskContext["interval"] | undefined;
  let item: unknown;
  return {
    runId: claim.runId,
    pipelineId: claim.pipelineId,
    // A mapped instance's task is its mapped task; the key says which instance it is.
    taskId: claim.mapKey === null ? claim.taskId : (parseMappedTaskId(claim.taskId)?.taskId ?? claim.taskId),
    mapKey: claim.mapKey,
    mapped: (taskId, page) => mappedPages(taskId, page?.after ?? null, Math.min(10_000, Math.max(1, Math.floor(page?.limit ?? 1_000)))),
    get item() {
      return (item ??= claim.mapItem === null ? undefined : JSON.parse(claim.mapItem));
    },
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
