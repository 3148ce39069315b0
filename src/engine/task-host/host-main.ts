/**
 * A task host: a long-lived child process of a worker that imports pipeline files once and runs
 * one attempt's task code at a time, so user code never runs in the loop that keeps leases
 * alive. The worker may give it several attempts at once: it runs them one after another, in
 * order, sends each one's result as it ends (before the next starts, so a crash in the next one
 * loses nothing), and gives back on request those it has not started. The worker owns timeouts
 * and kills this process when an attempt must stop and does not; see pool.ts.
 */
import { getPriority, setPriority } from "node:os";
import { systemClock } from "../../core/model/clock.ts";
import { isPipeline } from "../../core/pipeline/define.ts";
import type { MappedPage, MappedPages, Pipeline, Summary, TaskContext, WatermarkAccess } from "../../core/pipeline/types.ts";
import { AttemptLog } from "../executor/attempt-log.ts";
import { buildContext } from "../executor/task-context.ts";
import { fromError } from "../executor/run-function.ts";
import { taskCode } from "../executor/task-code-runner.ts";
import { AttemptConnections } from "../connections/connections.ts";
import type { AttemptResult } from "../executor/attempt-result.ts";
import { SecretMasker } from "../secrets/masker.ts";
import { importTypeScript } from "../project/typescript-cache.ts";
import { BUSY_AFTER_MS, type AttemptToRun, type FromHost, type ToHost } from "./protocol.ts";
import { ErrorClass } from "../../core/model/error-classes.ts";
import { taskOfInstance } from "../../core/policy/fan-out.ts";

// First, before any task code: the worker asked this host to yield the CPU to it (see pool.ts).
const nice = Number(process.argv.find((a) => a.startsWith("--nice="))?.slice("--nice=".length) ?? 0);
if (nice > 0) {
  try {
    setPriority(0, Math.min(19, getPriority(0) + nice)); // relative to the worker's, whatever it runs at
  } catch {
    // not allowed here: the host runs at the worker's priority
  }
}

const send = (message: FromHost) => process.send!(message);
const modules = new Map<string, Promise<Record<string, unknown>>>();
let current: { attemptId: number; controller: AbortController; log: AttemptLog } | null = null;
/** Given by the worker, not started yet: run in this order once the current one ends. */
const waiting: AttemptToRun[] = [];
let running = false;
let nextRequest = 1;
/** How long the last attempt's task code ran (ms), told with its result. */
let codeMs: number | undefined;
let logMaxBytes: number | null = null;
let projectDir = process.cwd();
let masker = new SecretMasker([]);
const pending = new Map<number, { resolve: (v: string | number | null) => void; reject: (e: Error) => void }>();

// The worker is gone (its pipe closed): nothing here may outlive it.
process.on("disconnect", () => process.exit(0));
for (const event of ["uncaughtException", "unhandledRejection"] as const) {
  process.on(event, (error: unknown) => {
    const e = error instanceof Error ? error : new Error(String(error));
    try {
      current?.log.line("ERROR", `${e.name}: ${e.message} (thrown outside the task's promise)`);
      current?.log.close();
      send({ type: "crash", name: e.name || "Error", message: e.message });
    } finally {
      process.exit(70);
    }
  });
}

// Node opens a pipe on fd 1 and 2 in non-blocking mode, and the mode belongs to the pipe, so
// `fs.writeSync(2, ...)`, native code and child processes that inherit the pipe would get EAGAIN
// (an attempt failed on it) whenever the worker reads slower than the task writes. Blocking, a
// writer waits for the worker to read instead, as it would on a terminal.
for (const stream of [process.stdout, process.stderr]) {
  (stream as unknown as { _handle?: { setBlocking?: (blocking: boolean) => number } })._handle?.setBlocking?.(true);
}

// Task code that prints goes to its attempt's log, like a command's output.
for (const stream of [process.stdout, process.stderr]) {
  const original = stream.write.bind(stream);
  stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    if (!current) return (original as (...a: unknown[]) => boolean)(chunk, ...rest);
    current.log.write(typeof chunk === "string" ? chunk : Buffer.from(chunk));
    const callback = rest.find((r) => typeof r === "function") as (() => void) | undefined;
    callback?.();
    return true;
  }) as typeof stream.write;
}

const watermarks: WatermarkAccess = {
  get: (pipelineId, taskId) => ask("get", pipelineId, taskId),
  save: async (pipelineId, taskId, value) => void (await ask("save", pipelineId, taskId, value)),
};

const pendingPages = new Map<number, { resolve: (page: MappedPage) => void; reject: (e: Error) => void }>();

/** `ctx.mapped` in a host: the worker, which owns the store, reads the page. */
const mappedPages: MappedPages = (taskId, after, limit) => {
  const id = nextRequest++;
  return new Promise((resolve, reject) => {
    pendingPages.set(id, { resolve, reject });
    send({ type: "mapped", id, taskId, after, limit });
  });
};

function ask(op: "get" | "save", pipelineId: string, taskId: string, value?: string | number): Promise<string | number | null> {
  const id = nextRequest++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    send({ type: "watermark", id, op, pipelineId, taskId, value });
  });
}

process.on("message", (message: ToHost) => {
  if (message.type === "run") {
    waiting.push(...message.attempts);
    if (!running) void runWaiting();
  } else if (message.type === "withdraw") {
    const asked = new Set(message.attemptIds);
    const given = waiting.filter((a) => asked.has(a.claim.attemptId));
    waiting.splice(0, waiting.length, ...waiting.filter((a) => !asked.has(a.claim.attemptId)));
    send({ type: "withdrawn", attemptIds: given.map((a) => a.claim.attemptId) });
  }
  else if (message.type === "init") {
    logMaxBytes = message.logMaxBytes;
    projectDir = message.projectDir;
    masker = new SecretMasker(message.secrets);
  }
  else if (message.type === "preload") for (const file of message.files) void moduleOf(file).catch(() => {});
  else if (message.type === "abort") {
    if (current?.attemptId !== message.attemptId) return; // ended already: the worker has its result
    const error = new Error(message.message);
    error.name = message.errorClass;
    current.controller.abort(error);
  } else if (message.type === "mapped-reply") {
    const waiting = pendingPages.get(message.id);
    pendingPages.delete(message.id);
    if (message.error !== undefined || !message.page) waiting?.reject(new Error(message.error ?? "no page"));
    else waiting?.resolve(message.page);
  } else if (message.type === "watermark-reply") {
    const waiting = pending.get(message.id);
    pending.delete(message.id);
    if (message.error !== undefined) waiting?.reject(new Error(message.error));
    else waiting?.resolve(message.value ?? null);
  }
});

async function runWaiting(): Promise<void> {
  running = true;
  try {
    for (let next = waiting.shift(); next; next = waiting.shift()) await run(next);
  } finally {
    running = false;
  }
}

async function run(message: AttemptToRun): Promise<void> {
  const attemptId = message.claim.attemptId;
  const log = new AttemptLog(message.claim.logPath, systemClock, { maxBytes: logMaxBytes, masker });
  const controller = new AbortController();
  current = { attemptId, controller, log };
  codeMs = undefined;
  let result: AttemptResult;
  try {
    const pipeline = await pipelineIn(message);
    if (typeof pipeline === "string") {
      result = { outcome: "failed", errorClass: ErrorClass.DefinitionChanged, errorMessage: pipeline, retryable: true, exitCode: null };
    } else {
      result = await call(pipeline, message, log, controller.signal);
    }
  } catch (error) {
    result = fromError(error);
  }
  current = null;
  log.close();
  try {
    send({ type: "done", attemptId, result, codeMs });
  } catch (error) {
    send({
      type: "done",
      attemptId,
      codeMs,
      result: { outcome: "failed", errorClass: ErrorClass.SummaryError, errorMessage: `summary is not JSON: ${(error as Error).message}`, retryable: false, exitCode: null },
    });
  }
}

function moduleOf(file: string): Promise<Record<string, unknown>> {
  let module = modules.get(file);
  if (!module) {
    // The compiled copies the worker made when it loaded the project (compiled here if they are
    // missing or stale): no loader thread in this process, unless a file cannot be followed.
    // A pipeline's bundle (the code its run is pinned to) carries its source map, as the compiled copies do.
    process.setSourceMapsEnabled(true);
    module = importTypeScript(file, projectDir);
    modules.set(file, module);
  }
  return module;
}

/** The pipeline as the worker loaded it, or why it is not there any more. */
async function pipelineIn(message: AttemptToRun): Promise<Pipeline | string> {
  const exports = await moduleOf(message.file);
  const pipeline = Object.values(exports).find((v): v is Pipeline => isPipeline(v) && v.id === message.claim.pipelineId);
  if (!pipeline) return `pipeline ${message.claim.pipelineId} is no longer in ${message.file}`;
  if (pipeline.version !== message.version) {
    return `${message.file} changed: pipeline ${pipeline.id} is version ${pipeline.version} now, the worker loaded ${message.version}`;
  }
  return pipeline;
}

async function call(pipeline: Pipeline, message: AttemptToRun, log: AttemptLog, signal: AbortSignal): Promise<AttemptResult> {
  const task = taskOfInstance(pipeline.tasks, message.claim.taskId);
  if (!task) return { outcome: "failed", errorClass: ErrorClass.DefinitionChanged, errorMessage: `pipeline ${pipeline.id} has no task ${message.claim.taskId} now`, retryable: true, exitCode: null };
  const connections = new AttemptConnections(message.connections);
  try {
    // Not spread: that would read the lazy interval.
    const context = Object.assign(buildContext(pipeline, message.claim, log, message.projectFrozen, watermarks, message.upstream, connections, message.traceparent, mappedPages) as TaskContext, { signal });
    if (message.timed) send({ type: "started", attemptId: message.claim.attemptId });
    const start = performance.now();
    // Said only if the event loop is free to say it: a busy loop is seen by its CPU (pool.ts).
    const busy = setTimeout(() => send({ type: "busy", attemptId: message.claim.attemptId }), BUSY_AFTER_MS);
    // A host runs one attempt at a time: its environment carries the attempt's trace context
    // for libraries that read TRACEPARENT, and gets back what it had after.
    const inherited = process.env.TRACEPARENT;
    if (message.traceparent !== null) process.env.TRACEPARENT = message.traceparent;
    try {
      return success(await taskCode(task, message.projectDir, message.claim.mapKey, message.external)(context));
    } finally {
      clearTimeout(busy);
      codeMs = performance.now() - start;
      if (message.traceparent !== null) {
        if (inherited === undefined) delete process.env.TRACEPARENT;
        else process.env.TRACEPARENT = inherited;
      }
    }
  } finally {
    await connections.closeAll();
  }
}

function success(value: Summary | void): AttemptResult {
  const summary = value ?? null;
  try {
    if (summary !== null) JSON.stringify(summary); // fails here, not in send
  } catch (error) {
    return { outcome: "failed", errorClass: ErrorClass.SummaryError, errorMessage: `summary is not JSON: ${(error as Error).message}`, retryable: false, exitCode: null };
  }
  return { outcome: "success", summary, exitCode: null };
}

send({ type: "ready", pid: process.pid });
