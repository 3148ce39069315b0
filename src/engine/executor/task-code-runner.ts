import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import type { MappedPages, Pipeline, Summary, TaskContext, TaskDefinition, WatermarkAccess } from "../../core/pipeline/types.ts";
import type { ConnectionConfig } from "../project/config.ts";
import { AttemptConnections } from "../connections/connections.ts";
import type { ClaimedAttempt } from "../../store/port.ts";
import type { AttemptLog } from "./attempt-log.ts";
import type { AttemptResult } from "./attempt-result.ts";
import { runFunctionTask } from "./run-function.ts";
import { buildContext, NO_MAPPED_PAGES } from "./task-context.ts";
import { unhandledKind } from "../../core/pipeline/kind.ts";
import { runExternalCall, type ExternalCall } from "./external-call.ts";
import { expansionCode, isExpansion } from "./map-expansion.ts";

export interface TaskCodeCall {
  pipeline: Pipeline;
  task: TaskDefinition;
  claim: ClaimedAttempt;
  log: AttemptLog;
  projectFrozen: readonly FrozenPeriod[];
  watermarks: WatermarkAccess;
  /** The project's connections, opened where the task code runs. */
  connections: Record<string, ConnectionConfig>;
  upstream: Record<string, Summary>;
  /** `ctx.mapped`: pages of a mapped task's instances of the attempt's run, read by the worker. */
  mapped?: MappedPages;
  /** `ctx.traceparent`: the attempt's trace context while traces are exported, else null. */
  traceparent: string | null;
  projectDir: string;
  timeoutMs: number | null;
  graceMs: number;
  cancel?: AbortSignal;
  /** Called when the task code starts: at once, or when the attempt leaves the runner's waiting list. */
  onStarted?: () => void;
  /** An external task's step: submit, poll or cancel its remote job. */
  external?: ExternalCall;
}

/**
 * Calls one piece of task code (a function task, a sensor's check, a command's argv builder, a
 * SQL task's statements) and says how it ended. A sensor's check answers `{ met }`, an argv
 * builder `{ argv }`.
 */
export interface TaskCodeRunner {
  call(request: TaskCodeCall): Promise<AttemptResult>;
  /**
   * How many attempts the runner can hold waiting beyond those it runs (task hosts keep a short
   * list each, run one after another): the worker may give it that many more than its free
   * slots. Absent: none; every call starts at once.
   */
  readonly waitingRoom?: number;
  /** Whether this pipeline's task code waits in the runner's lists (it runs in task hosts). */
  holds?(pipelineId: string): boolean;
}

/**
 * Task code in this very process. Only for pipelines that exist in memory, with no file a task
 * host could import (the engine API in tests, `idem/testing`): a busy loop here blocks the loop.
 */
export const inlineRunner: TaskCodeRunner = {
  async call(request) {
    request.onStarted?.();
    const connections = new AttemptConnections(request.connections);
    try {
      return await runFunctionTask({
        fn: taskCode(request.task, request.projectDir, request.claim.mapKey, request.external),
        context: buildContext(request.pipeline, request.claim, request.log, request.projectFrozen, request.watermarks, request.upstream, connections, request.traceparent, request.mapped ?? NO_MAPPED_PAGES),
        timeoutMs: request.timeoutMs,
        graceMs: request.graceMs,
        cancel: request.cancel,
      });
    } finally {
      await connections.closeAll();
    }
  },
};

type TaskCode = (ctx: Omit<TaskContext, "signal"> & { signal?: AbortSignal }) => Promise<Summary | void> | Summary | void;

/**
 * The task's code, the same in this process and in a task host: a function task's function, a
 * sensor's check, a SQL task's statements, a command's argv (built by its function, if it has one),
 * an external task's step.
 */
export function taskCode(task: TaskDefinition, projectDir: string, mapKey: string | null, external?: ExternalCall): TaskCode {
  switch (task.kind) {
    case "function":
      // A mapped task's own task instance finds and expands its list; its instances run `run`.
      return isExpansion(task, mapKey) ? expansionCode(task) : (task.run as TaskCode);
    case "sensor":
      return async (ctx) => ({ met: (await task.sensor(ctx as TaskContext)) === true });
    case "sql":
      // loaded on a SQL task's first attempt: commands that only open an engine do not pay for it
      return async (ctx) => (await import("./run-sql.ts")).runSqlTask(task, ctx, projectDir);
    case "command": {
      const command = task.command;
      return (ctx) => ({ argv: [...(typeof command === "function" ? command(ctx as TaskContext) : command)] });
    }
    case "external":
      // A mapped external task's own task instance finds and expands its list; each instance submits its own job.
      return isExpansion(task, mapKey) ? expansionCode(task) : (ctx) => runExternalCall(task.external, external, ctx as TaskContext);
    default:
      return unhandledKind(task);
  }
}
