import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import type { Pipeline, TaskDefinition, WatermarkAccess } from "../../core/pipeline/types.ts";
import type { ClaimedAttempt } from "../../store/port.ts";
import type { TaskHostPool } from "../task-host/pool.ts";
import type { TaskEntry } from "../task-host/protocol.ts";
import type { AttemptLog } from "./attempt-log.ts";
import type { AttemptResult } from "./attempt-result.ts";
import { runFunctionTask } from "./run-function.ts";
import { buildContext } from "./task-context.ts";

export interface TaskCodeCall {
  pipeline: Pipeline;
  task: TaskDefinition;
  entry: TaskEntry;
  claim: ClaimedAttempt;
  log: AttemptLog;
  projectFrozen: readonly FrozenPeriod[];
  watermarks: WatermarkAccess;
  timeoutMs: number | null;
  graceMs: number;
  cancel?: AbortSignal;
}

/**
 * Calls one piece of task code (a function task, a sensor's check, a command's argv builder) and
 * says how it ended. A sensor's check answers `{ met }`, an argv builder `{ argv }`.
 */
export interface TaskCodeRunner {
  call(request: TaskCodeCall): Promise<AttemptResult>;
}

/**
 * Task code in this very process. Only for pipelines that exist in memory, with no file a task
 * host could import (the engine API in tests, `idem/testing`): a busy loop here blocks the loop.
 */
export const inlineRunner: TaskCodeRunner = {
  call(request) {
    const { task } = request;
    const fn =
      request.entry === "run" ? task.run!
      : request.entry === "sensor" ? async (ctx: Parameters<NonNullable<TaskDefinition["sensor"]>>[0]) => ({ met: (await task.sensor!(ctx)) === true })
      : (ctx: Parameters<NonNullable<TaskDefinition["run"]>>[0]) => ({ argv: [...(task.command as (c: typeof ctx) => readonly string[])(ctx)] });
    return runFunctionTask({
      fn,
      context: buildContext(request.pipeline, request.claim, request.log, request.projectFrozen, request.watermarks),
      timeoutMs: request.timeoutMs,
      graceMs: request.graceMs,
      cancel: request.cancel,
    });
  },
};

/** Task code in the pool's task hosts, for every pipeline loaded from a file. */
export function hostedRunner(pool: TaskHostPool, fileOf: (pipelineId: string) => string | undefined): TaskCodeRunner {
  return {
    call(request) {
      const file = fileOf(request.pipeline.id);
      if (!file) return inlineRunner.call(request);
      return pool.call({
        file,
        version: request.pipeline.version,
        entry: request.entry,
        claim: request.claim,
        projectFrozen: request.projectFrozen,
        watermarks: request.watermarks,
        timeoutMs: request.timeoutMs,
        graceMs: request.graceMs,
        cancel: request.cancel,
      });
    },
  };
}
