import { DefinitionError } from "../core/model/errors.ts";

/** How the run came to be; a backfill or a restatement rewrites old intervals. */
export type RunTrigger = "schedule" | "manual" | "backfill" | "data" | "restate";

/** Who is writing: recorded in history with every write. Build it from the task's context. */
export interface WriteContext {
  runId: string;
  pipelineId: string;
  taskId: string;
  tryNumber: number;
  /** The business date of the run, YYYY-MM-DD; checked against frozen dates. */
  businessDate?: string | null;
  /** When set, the write is applied at most once per (table, batchId). */
  batchId?: string | null;
  /** The run's trigger; incremental loads read it so that a backfill never moves a watermark. */
  trigger?: RunTrigger | null;
}

/** Takes any object with the WriteContext fields (an idem TaskContext has them all). */
export function writeContextFrom(
  ctx: { runId: string; pipelineId: string; taskId: string; tryNumber: number; businessDate?: string | null; trigger?: RunTrigger | null },
  extra: { batchId?: string | null } = {},
): WriteContext & { trigger: RunTrigger | null } {
  for (const field of ["runId", "pipelineId", "taskId"] as const) {
    if (typeof ctx[field] !== "string" || ctx[field] === "") throw new DefinitionError(`write context: ${field} is missing`);
  }
  return {
    runId: ctx.runId,
    pipelineId: ctx.pipelineId,
    taskId: ctx.taskId,
    tryNumber: ctx.tryNumber,
    businessDate: ctx.businessDate ?? null,
    batchId: extra.batchId ?? null,
    trigger: ctx.trigger ?? null,
  };
}
