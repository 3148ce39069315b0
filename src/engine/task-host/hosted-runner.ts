import { inlineRunner, type TaskCodeRunner } from "../executor/task-code-runner.ts";
import type { TaskHostPool } from "./pool.ts";
import { codeOf } from "../project/code-of.ts";

/**
 * Task code in the pool's task hosts, for every pipeline loaded from a file: from the bundle the
 * pipeline was loaded from (the code its run is pinned to), else from the file.
 */
export function hostedRunner(pool: TaskHostPool, fileOf: (pipelineId: string) => string | undefined): TaskCodeRunner {
  return {
    waitingRoom: pool.waitingRoom,
    holds: (pipelineId) => fileOf(pipelineId) !== undefined,
    call(request) {
      const file = fileOf(request.pipeline.id);
      if (!file) return inlineRunner.call(request);
      const { pipeline, task: _task, log: _log, ...call } = request;
      return pool.call({ ...call, file: codeOf(pipeline)?.bundle ?? file, version: pipeline.version });
    },
  };
}
