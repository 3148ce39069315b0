import { join } from "node:path";
import type { Clock } from "../../core/model/clock.ts";
import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import { retryDelay } from "../../core/policy/retry.ts";
import { TaskSkipped } from "../../core/pipeline/skip.ts";
import type { Pipeline, Summary, TaskContext, TaskDefinition, WatermarkAccess } from "../../core/pipeline/types.ts";
import type { FreshnessPromise } from "../../core/pipeline/promise.ts";
import { toZoned } from "../../core/time/dates.ts";
import { MAX_SUMMARY_BYTES, type AttemptFinish, type ClaimedAttempt } from "../../store/port.ts";
import { AttemptLog } from "./attempt-log.ts";
import type { AttemptResult } from "./attempt-result.ts";
import { runCommandTask } from "./run-command.ts";
import { fromError, runFunctionTask } from "./run-function.ts";
import { runSensor } from "./run-sensor.ts";
import { watermarksForRun } from "./watermarks.ts";
import { runSqlTask } from "./run-sql.ts";
import { AttemptConnections } from "../connections/connections.ts";
import { maskSecrets } from "../connections/secrets.ts";
import type { ConnectionConfig } from "../project/config.ts";

export interface AttemptEnvironment {
  clock: Clock;
  workerId: string;
  /** Scratch space for command summaries: `<stateDir>/tmp`. */
  scratchDir: string;
  /** Where command tasks run when they name no cwd. */
  defaultCwd: string;
  cancel?: AbortSignal;
  random?: () => number;
  /** Frozen periods of the whole project (the pipeline's own are added to them). */
  frozen?: readonly FrozenPeriod[];
  /** The state store's watermarks, handed to task code. */
  watermarks: WatermarkAccess;
  /** The project's named connections, for SQL tasks and `ctx.connection(name)`. */
  connections?: Record<string, ConnectionConfig>;
  /** The summaries the given tasks of a run returned (their latest successful attempt). */
  upstreamSummaries?: (runId: string, taskIds: readonly string[]) => Promise<Record<string, Summary>>;
}

/** Runs one claimed attempt to its end and says how to record it. Never throws for task errors. */
export async function executeAttempt(
  pipeline: Pipeline,
  claim: ClaimedAttempt,
  env: AttemptEnvironment,
): Promise<AttemptFinish> {
  const task = pipeline.tasks.get(claim.taskId);
  const log = new AttemptLog(claim.logPath, env.clock);
  const connections = new AttemptConnections(env.connections ?? {});
  let result: AttemptResult;
  try {
    if (!task) {
      result = {
        outcome: "failed",
        errorClass: "DefinitionError",
        errorMessage: `pipeline ${pipeline.id} version ${pipeline.version} has no task ${claim.taskId}`,
        retryable: false,
        exitCode: null,
      };
    } else {
      result = await runTask(pipeline, task, claim, log, env, connections);
    }
  } catch (error) {
    result = fromError(error);
  } finally {
    await connections.closeAll();
  }
  const promise = task?.publishes ? pipeline.promises.find((p) => p.dataset === task.publishes) ?? null : null;
  const unmasked = toFinish(checkCompleteness(result, promise), claim, task, env);
  // An error can quote a connection string; what is kept in the state store is masked.
  const finish = unmasked.errorMessage ? { ...unmasked, errorMessage: maskSecrets(unmasked.errorMessage) } : unmasked;
  if (finish.errorMessage) {
    try {
      log.line("ERROR", `${finish.errorClass}: ${finish.errorMessage}`);
    } catch {
      // a log we cannot write must not hide the result
    }
  }
  log.close();
  return finish;
}

async function runTask(
  pipeline: Pipeline,
  task: TaskDefinition,
  claim: ClaimedAttempt,
  log: AttemptLog,
  env: AttemptEnvironment,
  connections: AttemptConnections,
): Promise<AttemptResult> {
  const watermarks = watermarksForRun(env.watermarks, claim.trigger, (line) => log.line("INFO", line));
  const upstream = task.kind !== "command" && task.upstream.length > 0 && env.upstreamSummaries ? await env.upstreamSummaries(claim.runId, task.upstream) : {};
  const context = { ...buildContext(pipeline, claim, log, env.frozen ?? [], watermarks), upstream, connection: (name: string) => connections.get(name) };
  if (task.kind === "sensor") return runSensor(task, context, claim, env);
  if (task.kind === "function" || task.kind === "sql") {
    return runFunctionTask({
      fn: task.kind === "sql" ? (ctx) => runSqlTask(task, ctx, env.defaultCwd) : task.run!,
      context,
      timeoutMs: task.policy.timeoutMs,
      graceMs: task.killGraceMs,
      cancel: env.cancel,
    });
  }
  const argv = typeof task.command === "function" ? task.command({ ...context, signal: new AbortController().signal }) : task.command!;
  return runCommandTask({
    argv,
    cwd: task.cwd ?? env.defaultCwd,
    env: {
      ...(process.env as Record<string, string>),
      ...task.env,
      IDEM_RUN_ID: claim.runId,
      IDEM_PIPELINE: claim.pipelineId,
      IDEM_TASK: claim.taskId,
      IDEM_BUSINESS_DATE: claim.businessDate,
      IDEM_INTERVAL_START: new Date(claim.intervalStart).toISOString(),
      IDEM_INTERVAL_END: new Date(claim.intervalEnd).toISOString(),
      IDEM_TRY: String(claim.tryNumber),
    },
    logFd: log.fd(),
    scratchDir: join(env.scratchDir, String(claim.attemptId)),
    timeoutMs: task.policy.timeoutMs,
    killGraceMs: task.killGraceMs,
    dataErrorExitCodes: task.dataErrorExitCodes,
    cancel: env.cancel,
  });
}

export function buildContext(
  pipeline: Pipeline,
  claim: ClaimedAttempt,
  log: AttemptLog,
  projectFrozen: readonly FrozenPeriod[],
  watermarks: WatermarkAccess,
): Omit<TaskContext, "signal" | "upstream" | "connection"> {
  const timezone = pipeline.schedule.timezone;
  return {
    runId: claim.runId,
    pipelineId: claim.pipelineId,
    taskId: claim.taskId,
    businessDate: claim.businessDate,
    interval: { start: toZoned(claim.intervalStart, timezone), end: toZoned(claim.intervalEnd, timezone) },
    tryNumber: claim.tryNumber,
    trigger: claim.trigger,
    frozen: [...pipeline.frozen, ...projectFrozen],
    watermarks,
    params: { ...pipeline.params, ...claim.params },
    log: log.logger(),
    skip(reason: string): never {
      throw new TaskSkipped(reason);
    },
  };
}

function toFinish(
  result: AttemptResult,
  claim: ClaimedAttempt,
  task: TaskDefinition | undefined,
  env: AttemptEnvironment,
): AttemptFinish {
  const now = env.clock.now();
  const base = {
    attemptId: claim.attemptId,
    workerId: env.workerId,
    now,
    retryable: false,
    retryAt: null,
    datasets: task?.produces ?? [],
    publishes:
      task?.publishes && result.outcome === "success"
        ? [{ dataset: task.publishes, emptyReason: typeof result.summary?.empty === "string" ? result.summary.empty : null }]
        : [],
  };
  if (result.outcome === "rescheduled") {
    return { ...base, outcome: "rescheduled", retryAt: result.pokeAt, exitCode: null, errorClass: null, errorMessage: null, summary: serializeOk(result.summary), skipReason: null };
  }
  if (result.outcome !== "failed") {
    const summary = serializeSummary(result.summary);
    if (typeof summary === "object" && summary !== null) {
      return { ...base, outcome: "failed", exitCode: result.exitCode, errorClass: summary.errorClass, errorMessage: summary.error, summary: null, skipReason: null };
    }
    return {
      ...base,
      outcome: result.outcome,
      exitCode: result.exitCode,
      errorClass: null,
      errorMessage: null,
      summary,
      skipReason: result.outcome === "skipped" ? result.reason : null,
    };
  }
  const retryAt =
    result.retryable && task ? now + retryDelay(task.policy, claim.tryNumber + 1, env.random ?? Math.random) : null;
  return {
    ...base,
    outcome: "failed",
    retryable: result.retryable,
    retryAt,
    exitCode: result.exitCode,
    errorClass: result.errorClass,
    errorMessage: result.errorMessage,
    summary: null,
    skipReason: null,
  };
}

/**
 * A publishing task publishes only a complete day: its summary must meet the promise's
 * completeness condition, unless it declares the day empty (`empty: "<reason>"`). Otherwise the
 * data is wrong, and retrying will not change it.
 */
function checkCompleteness(result: AttemptResult, promise: FreshnessPromise | null): AttemptResult {
  if (result.outcome !== "success" || !promise?.completeness) return result;
  const summary = result.summary ?? {};
  if (typeof summary.empty === "string") return result;
  let verdict: true | string;
  try {
    verdict = promise.completeness(summary);
  } catch (error) {
    verdict = `the completeness check threw: ${(error as Error).message}`;
  }
  if (verdict === true) return result;
  return {
    outcome: "failed",
    errorClass: "DataError",
    errorMessage: `${promise.dataset} is not complete, so it is not published: ${verdict}`,
    retryable: false,
    exitCode: result.exitCode,
  };
}

function serializeOk(summary: Summary | null): string | null {
  const serialized = serializeSummary(summary);
  return typeof serialized === "string" ? serialized : null;
}

/** The store keeps counts, not data: a summary must be a small JSON object. */
function serializeSummary(summary: Summary | null): string | null | { errorClass: string; error: string } {
  if (summary === null || summary === undefined) return null;
  if (typeof summary !== "object" || Array.isArray(summary)) {
    return { errorClass: "SummaryError", error: `a task returns a summary object (or nothing), not ${Array.isArray(summary) ? "an array" : typeof summary}` };
  }
  let text: string;
  try {
    text = JSON.stringify(summary);
  } catch (error) {
    return { errorClass: "SummaryError", error: `summary is not JSON: ${(error as Error).message}` };
  }
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_SUMMARY_BYTES) {
    return { errorClass: "SummaryTooLarge", error: `summary is ${bytes} bytes; the store keeps at most ${MAX_SUMMARY_BYTES} (counts, not data)` };
  }
  return text;
}
