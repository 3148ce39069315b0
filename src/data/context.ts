import { DefinitionError } from "../core/model/errors.ts";
import type { TriggerKind } from "../core/model/states.ts";

/** How the run came to be; a manual run, a backfill or a restatement reads its own interval. */
export type RunTrigger = TriggerKind;

/** A run's interval as ISO date-times with their offset in the schedule's zone: `2026-09-01T00:00:00+02:00`. */
export interface WriteInterval {
  start: string;
  end: string;
}

/** Who is writing: recorded in history with every write. Build it from the task's context. */
export interface WriteContext {
  runId: string;
  pipelineId: string;
  taskId: string;
  tryNumber: number;
  /** The business date of the run, YYYY-MM-DD; checked against frozen dates. */
  businessDate?: string | null;
  /** A mapped instance's key (`ctx.mapKey`); replaceKey replaces the rows of this key. */
  mapKey?: string | null;
  /** When set, the write is applied at most once per (table, batchId). */
  batchId?: string | null;
  /** The run's trigger; incremental loads read it to choose between the watermark and the interval. */
  trigger?: RunTrigger | null;
  /** The run's interval: what an incremental load reads in a manual run, a backfill or a restatement. */
  interval?: WriteInterval | null;
}

/** A zoned date-time as task code gets it (`ctx.interval.start`, a Temporal.ZonedDateTime). */
interface ZonedInstant {
  toString(options?: { timeZoneName?: "never" }): string;
}

/** `pipeline p, task t, business date d: ` before an error line, so it says whose write failed; empty without a context. */
export function writerPrefix(context: WriteContext | null | undefined): string {
  if (!context) return "";
  return `pipeline ${context.pipelineId}, task ${context.taskId}${context.businessDate ? `, business date ${context.businessDate}` : ""}: `;
}

/** Takes any object with the WriteContext fields (an idem TaskContext has them all). */
export function writeContextFrom(
  ctx: {
    runId: string; pipelineId: string; taskId: string; tryNumber: number; businessDate?: string | null; trigger?: RunTrigger | null;
    mapKey?: string | null;
    interval?: { start: ZonedInstant; end: ZonedInstant } | null;
  },
  extra: { batchId?: string | null } = {},
): WriteContext & { trigger: RunTrigger | null } {
  for (const field of ["runId", "pipelineId", "taskId"] as const) {
    if (typeof ctx[field] !== "string" || ctx[field] === "") throw new DefinitionError(`write context: ${field} is missing`);
  }
  const interval = ctx.interval ? { start: ctx.interval.start.toString({ timeZoneName: "never" }), end: ctx.interval.end.toString({ timeZoneName: "never" }) } : null;
  return {
    runId: ctx.runId,
    pipelineId: ctx.pipelineId,
    taskId: ctx.taskId,
    tryNumber: ctx.tryNumber,
    businessDate: ctx.businessDate ?? null,
    mapKey: ctx.mapKey ?? null,
    batchId: extra.batchId ?? null,
    trigger: ctx.trigger ?? null,
    interval,
  };
}
