import { retryDelay } from "../../core/policy/retry.ts";
import type { Pipeline, Summary, TaskDefinition } from "../../core/pipeline/types.ts";
import type { FreshnessPromise } from "../../core/pipeline/promise.ts";
import { MAX_SUMMARY_BYTES, type AttemptFinish, type ClaimedAttempt } from "../../store/port.ts";
import { AttemptLog } from "./attempt-log.ts";
import type { AttemptResult } from "./attempt-result.ts";
import { fromError } from "./run-function.ts";
import type { AttemptEnvironment } from "./attempt-environment.ts";
import { unhandledKind } from "../../core/pipeline/kind.ts";
import { commandAttempt } from "./kinds/command.ts";
import { functionAttempt } from "./kinds/function.ts";
import type { KindAttempt } from "./kinds/kind-attempt.ts";
import { sensorAttempt } from "./kinds/sensor.ts";
import { sqlAttempt } from "./kinds/sql.ts";
import { externalAttempt } from "./kinds/external.ts";
import { NO_SECRETS, type SecretMasker } from "../secrets/masker.ts";
import { watermarksForRun } from "./watermarks.ts";
import { attemptTraceparent, tracingEnabled } from "../tracing/trace-ids.ts";
import { ErrorClass } from "../../core/model/error-classes.ts";
import { taskOfInstance } from "../../core/policy/fan-out.ts";
import { expansionFinish, isExpansion, upstreamInstances } from "./map-expansion.ts";

/**
 * Whether the task's whole attempt is one call of the runner (a function or SQL task), so it can
 * wait in the runner's list until a task host is free. Sensors and commands run steps of their
 * own in the worker: they are started only into a free slot.
 */
export function waitsInRunner(pipeline: Pipeline, taskId: string): boolean {
  const task = taskOfInstance(pipeline.tasks, taskId);
  if (!task) return false;
  switch (task.kind) {
    case "function":
    case "sql":
      return true;
    case "sensor":
    case "command":
    case "external":
      return false;
    default:
      return unhandledKind(task);
  }
}

/** Runs one claimed attempt to its end and says how to record it. Never throws for task errors. */
export async function executeAttempt(
  pipeline: Pipeline,
  claim: ClaimedAttempt,
  env: AttemptEnvironment,
): Promise<AttemptFinish> {
  const task = taskOfInstance(pipeline.tasks, claim.taskId);
  const log = new AttemptLog(claim.logPath, env.clock, { maxBytes: env.logMaxBytes ?? null, masker: env.masker });
  let result: AttemptResult;
  try {
    if (!task) {
      result = {
        outcome: "failed",
        errorClass: ErrorClass.DefinitionError,
        errorMessage: `pipeline ${pipeline.id} version ${pipeline.version} has no task ${claim.taskId}`,
        retryable: false,
        exitCode: null,
      };
    } else {
      result = await runTask(pipeline, task, claim, log, env);
    }
  } catch (error) {
    result = fromError(error);
  }
  const promise = task?.publishes ? pipeline.promises.find((p) => p.dataset === task.publishes) ?? null : null;
  const finish = maskFinish(toFinish(pipeline, checkCompleteness(result, promise), claim, task, env), env.masker ?? NO_SECRETS);
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
): Promise<AttemptResult> {
  const watermarks = watermarksForRun(env.watermarks, claim.trigger, (line) => log.line("INFO", line));
  let upstream: Promise<Record<string, Summary>> | null = null;
  const readUpstream = () => (upstream ??= readUpstreamSummaries(task, claim, env));
  const traceparent = tracingEnabled(process.env) ? attemptTraceparent(claim.runId, claim.taskId, claim.tryNumber) : null;
  const attempt: KindAttempt = {
    claim,
    log,
    env,
    traceparent,
    code: async (options) =>
      env.runner.call({
        pipeline, task, claim, log,
        projectFrozen: env.frozen ?? [],
        watermarks,
        connections: env.connections ?? {},
        upstream: options.upstream ? await readUpstream() : {},
        mapped: (taskId, after, limit) =>
          env.mappedPages ? env.mappedPages(claim.runId, taskId, after, limit) : Promise.reject(new Error("ctx.mapped: this worker reads no store")),
        traceparent,
        projectDir: env.defaultCwd,
        timeoutMs: options.timeoutMs === undefined ? task.policy.timeoutMs : options.timeoutMs,
        graceMs: task.killGraceMs,
        cancel: env.cancel,
        onStarted: env.onStarted,
        ...(options.external === undefined ? {} : { external: options.external }),
      }),
  };
  switch (task.kind) {
    case "function":
      return functionAttempt(task, attempt);
    case "command":
      return commandAttempt(task, attempt);
    case "sql":
      return sqlAttempt(task, attempt);
    case "sensor":
      return sensorAttempt(task, attempt);
    case "external":
      // A mapped external task's own step is its list's expansion, a call of task code like a function's.
      return isExpansion(task, claim.mapKey) ? attempt.code({ upstream: true }) : externalAttempt(task, attempt);
    default:
      return unhandledKind(task);
  }
}

async function readUpstreamSummaries(task: TaskDefinition, claim: ClaimedAttempt, env: AttemptEnvironment): Promise<Record<string, Summary>> {
  if (task.upstream.length === 0 || !env.upstreamSummaries) return {};
  if (claim.mapKey === null) return env.upstreamSummaries(claim.runId, task.upstream);
  const read = upstreamInstances(task, claim.mapKey);
  const found = await env.upstreamSummaries(claim.runId, read.map((r) => r.instance));
  return Object.fromEntries(read.filter((r) => found[r.instance] !== undefined).map((r) => [r.name, found[r.instance]!]));
}

function toFinish(
  pipeline: Pipeline,
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
  if (result.outcome === "success" && task && isExpansion(task, claim.mapKey)) {
    const expanded = expansionFinish(pipeline, task, result.summary);
    if (expanded) return { ...base, outcome: "success", exitCode: result.exitCode, errorClass: null, errorMessage: null, skipReason: null, ...expanded };
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
    errorClass: ErrorClass.DataError,
    errorMessage: `${promise.dataset} is not complete, so it is not published: ${verdict}`,
    retryable: false,
    exitCode: result.exitCode,
  };
}

/** Error messages, skip reasons and summaries reach the store, the CLI and alerts: no secret may. */
function maskFinish(finish: AttemptFinish, masker: SecretMasker): AttemptFinish {
  if (masker.empty) return finish;
  return {
    ...finish,
    errorMessage: finish.errorMessage === null ? null : masker.mask(finish.errorMessage),
    skipReason: finish.skipReason === null ? null : masker.mask(finish.skipReason),
    summary: finish.summary === null ? null : JSON.stringify(masker.maskDeep(JSON.parse(finish.summary))),
  };
}

function serializeOk(summary: Summary | null): string | null {
  const serialized = serializeSummary(summary);
  return typeof serialized === "string" ? serialized : null;
}

/** The store keeps counts, not data: a summary must be a small JSON object. */
function serializeSummary(summary: Summary | null): string | null | { errorClass: ErrorClass; error: string } {
  if (summary === null || summary === undefined) return null;
  if (typeof summary !== "object" || Array.isArray(summary)) {
    return { errorClass: ErrorClass.SummaryError, error: `a task returns a summary object (or nothing), not ${Array.isArray(summary) ? "an array" : typeof summary}` };
  }
  let text: string;
  try {
    text = JSON.stringify(summary);
  } catch (error) {
    return { errorClass: ErrorClass.SummaryError, error: `summary is not JSON: ${(error as Error).message}` };
  }
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_SUMMARY_BYTES) {
    return { errorClass: ErrorClass.SummaryTooLarge, error: `summary is ${bytes} bytes; the store keeps at most ${MAX_SUMMARY_BYTES} (counts, not data)` };
  }
  return text;
}
