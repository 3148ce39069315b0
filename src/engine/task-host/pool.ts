import type { ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { formatDuration } from "../../core/time/duration.ts";
import type { ClaimedAttempt } from "../../store/port.ts";
import type { AttemptResult } from "../executor/attempt-result.ts";
import type { TaskCodeCall, TaskEntry } from "../executor/task-code-runner.ts";
import { stopReason } from "../executor/stop-reason.ts";
import { signalGroup, spawnSupervised } from "../executor/supervised-spawn.ts";
import type { FromHost, ToHost } from "./protocol.ts";
import { RawOutput } from "./raw-output.ts";
import { SecretMasker } from "../secrets/masker.ts";
import { ErrorClass } from "../../core/model/error-classes.ts";

export interface TaskHostPoolOptions {
  /** Hosts alive at most: one per attempt the worker runs at once. */
  size: number;
  /** The project folder: hosts run there. */
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** The V8 heap limit of each host (--max-old-space-size); a task beyond it crashes its host only. */
  memoryMb?: number;
  logMaxBytes: number | null;
  secrets: readonly string[];
  log?: (line: string) => void;
  /** Pipeline files a new host imports at once, so its first attempt does not wait for them. */
  preload?: () => readonly string[];
}

/**
 * Hosts run at this much lower priority (nice) than their worker. On a machine with fewer cores
 * than hosts, a host woken by its next attempt would otherwise take the core from the worker
 * mid-claim, and the worker is what keeps every attempt's lease alive and starts the next one:
 * task code must not starve it. Under no contention a host still gets a whole core.
 */
export const TASK_HOST_NICENESS = 5;

/** How long a host may take to load a pipeline file before the attempt's timeout starts anyway. */
const LOAD_ALLOWANCE_MS = 60_000;

/** After a host exits: how long its last output may take to arrive before the attempt is settled without it. */
const DRAIN_MS = 1_000;

/** One attempt's task code, as a task host is asked to run it: the pipeline named by its file and version. */
export type HostCall = Omit<TaskCodeCall, "pipeline" | "task" | "log"> & { file: string; version: string };

interface Host {
  child: ChildProcess;
  ready: Promise<boolean>;
  generation: number;
  busy: boolean;
  dead: boolean;
  /** The last bytes the host wrote to stderr: why it crashed, when it did. */
  stderrTail: string;
  crash: { name: string; message: string } | null;
  onMessage: ((message: FromHost) => void) | null;
  /** Where the host's own output goes while an attempt runs on it (its log, bounded). */
  output: RawOutput | null;
  onExit: ((code: number | null, signal: NodeJS.Signals | null) => void) | null;
}

const here = fileURLToPath(import.meta.url);
const HOST_MAIN = fileURLToPath(new URL(`./host-main${extname(here)}`, import.meta.url));
/** Hosts load TypeScript pipeline files with the same loader as the CLI. */
const TSX_LOADER = createRequire(import.meta.url).resolve("tsx");

/**
 * Long-lived child processes that run task code, one attempt at a time each. Why processes and
 * not threads: a native crash, `process.exit()` or an out-of-memory abort ends only the host;
 * a busy loop is stopped by killing it; and a fresh host imports the pipeline files as they are
 * now, which is how changed files reach task code without a restart. Starting an attempt on a
 * live host is one message each way, not a process start.
 */
export class TaskHostPool {
  readonly #o: TaskHostPoolOptions;
  readonly #masker: SecretMasker;
  readonly #hosts = new Set<Host>();
  readonly #waiting: (() => void)[] = [];
  #generation = 0;
  #closed = false;

  constructor(options: TaskHostPoolOptions) {
    this.#o = options;
    this.#masker = new SecretMasker(options.secrets);
  }

  /** Pipeline files changed: hosts that imported the old ones leave (busy ones after their attempt). */
  retire(): void {
    this.#generation++;
    for (const host of this.#hosts) if (!host.busy) this.#kill(host);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const exits = [...this.#hosts].map((h) => new Promise<void>((r) => (h.dead ? r() : h.child.once("exit", () => r()))));
    for (const host of this.#hosts) this.#kill(host);
    await Promise.all(exits);
  }

  /** Hosts alive now (idle or busy). */
  get size(): number {
    return this.#hosts.size;
  }

  /** Starts hosts ahead of the first attempt, so it does not wait for one to boot. */
  warm(count = 1): void {
    while (this.#hosts.size < Math.min(count, this.#o.size)) this.#spawn();
  }

  async call(request: HostCall): Promise<AttemptResult> {
    const host = await this.#acquire();
    if (!host) {
      return { outcome: "failed", errorClass: ErrorClass.TaskCrashed, errorMessage: `the task host did not start: ${lastLine(this.#lastTail)}`, retryable: true, exitCode: null };
    }
    try {
      return await this.#runOn(host, request);
    } finally {
      host.busy = false;
      host.onMessage = null;
      host.onExit = null;
      if (host.dead || host.generation !== this.#generation || this.#closed) this.#kill(host);
      this.#waiting.shift()?.();
    }
  }

  #lastTail = "";

  #runOn(host: Host, request: HostCall): Promise<AttemptResult> {
    return new Promise<AttemptResult>((resolve) => {
      let stopping: { errorClass: ErrorClass; message: string } | null = null;
      let settled = false;
      // Plain timers, not AbortSignals: this is the per-task path, and aborting a signal is not cheap.
      const timers: NodeJS.Timeout[] = [];
      const later = (ms: number, fn: () => void) => timers.push(setTimeout(() => !settled && fn(), ms));
      const finish = (result: AttemptResult) => {
        if (settled) return;
        settled = true;
        for (const timer of timers) clearTimeout(timer);
        host.output?.close();
        host.output = null;
        request.cancel?.removeEventListener("abort", onCancel);
        resolve(result);
      };
      const stop = (why: { errorClass: ErrorClass; message: string }) => {
        if (stopping || settled) return;
        stopping = why;
        // A lost lease leaves no time for grace: the retry may start any moment.
        if (why.errorClass === ErrorClass.LeaseLost) return this.#kill(host);
        this.#send(host, { type: "abort", errorClass: why.errorClass, message: why.message });
        later(request.graceMs, () => {
          // The task did not honour its signal (a busy loop, a call that ignores it): end its process.
          stopping = { ...why, message: `${why.message}; it did not stop within ${formatDuration(request.graceMs)} of its signal, so its process was killed` };
          this.#kill(host);
        });
      };
      const onCancel = () => stop(stopReason(request.cancel!));
      let timeoutStarted = false;
      const startTimeout = () => {
        if (request.timeoutMs === null || timeoutStarted) return;
        timeoutStarted = true;
        const timeoutMs = request.timeoutMs;
        later(timeoutMs, () => stop({ errorClass: ErrorClass.Timeout, message: `timed out after ${formatDuration(timeoutMs)}` }));
      };
      const failedAsStopped = (): AttemptResult => ({ outcome: "failed", errorClass: stopping!.errorClass, errorMessage: stopping!.message, retryable: true, exitCode: null });

      host.onMessage = (message) => {
        if (message.type === "started") startTimeout();
        else if (message.type === "done") finish(stopping ? failedAsStopped() : message.result);
        else if (message.type === "watermark") {
          const op = message.op === "get"
            ? request.watermarks.get(message.pipelineId, message.taskId)
            : request.watermarks.save(message.pipelineId, message.taskId, message.value!).then(() => null);
          op.then(
            (value) => this.#send(host, { type: "watermark-reply", id: message.id, value }),
            (error: Error) => this.#send(host, { type: "watermark-reply", id: message.id, error: error.message }),
          );
        }
      };
      host.onExit = (code, signal) => finish(stopping ? failedAsStopped() : crashResult(host, code, signal, this.#o.memoryMb));

      // The timeout counts from the call of the task code; a file that takes too long to load starts it anyway.
      if (request.timeoutMs !== null) later(LOAD_ALLOWANCE_MS, startTimeout);
      request.cancel?.addEventListener("abort", onCancel, { once: true });
      host.output = new RawOutput(request.claim.logPath, this.#o.logMaxBytes, this.#masker);
      this.#send(host, {
        type: "run",
        file: request.file,
        version: request.version,
        entry: request.entry,
        claim: request.claim,
        projectFrozen: request.projectFrozen,
        connections: request.connections,
        upstream: request.upstream,
        projectDir: request.projectDir,
        timed: request.timeoutMs !== null,
      });
      if (request.cancel?.aborted) onCancel();
    });
  }

  async #acquire(): Promise<Host | null> {
    for (;;) {
      let host = [...this.#hosts].find((h) => !h.busy && !h.dead && h.generation === this.#generation);
      if (!host && this.#hosts.size < this.#o.size) host = this.#spawn();
      if (host) {
        host.busy = true;
        if (await host.ready) return host;
        this.#hosts.delete(host);
        return null;
      }
      // Every host is busy (or still leaving): wait for one to be released.
      const idleOld = [...this.#hosts].find((h) => !h.busy && h.generation !== this.#generation);
      if (idleOld) this.#kill(idleOld);
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
  }

  #spawn(): Host {
    const argv = [
      process.execPath,
      // Resolve packages (and "idem" itself) the way this process does.
      ...process.execArgv.filter((a) => a.startsWith("--conditions=")),
      ...(this.#o.memoryMb ? [`--max-old-space-size=${this.#o.memoryMb}`] : []),
      "--import", TSX_LOADER, HOST_MAIN, `--nice=${TASK_HOST_NICENESS}`,
    ];
    const child = spawnSupervised(argv, { cwd: this.#o.cwd, env: this.#o.env ?? process.env, stdout: "pipe", stderr: "pipe", ipc: true });
    let markReady: (ok: boolean) => void = () => {};
    const host: Host = {
      child,
      ready: new Promise<boolean>((r) => (markReady = r)),
      generation: this.#generation,
      busy: false,
      dead: false,
      stderrTail: "",
      crash: null,
      onMessage: null,
      output: null,
      onExit: null,
    };
    // Task code's console is in its log already (the host captures it); what comes here is
    // written below it (the runtime's out-of-memory report, native code, child processes): it
    // belongs to the attempt, if one runs, bounded like the rest of its log.
    const forward = (to: NodeJS.WriteStream) => (chunk: Buffer) => {
      if (host.output) host.output.write(chunk);
      else to.write(chunk);
    };
    child.stdout!.on("data", forward(process.stdout));
    child.stderr!.on("data", forward(process.stderr));
    child.stderr!.on("data", (chunk: Buffer) => (host.stderrTail = (host.stderrTail + chunk.toString("utf8")).slice(-4096)));
    // The last output (why the host died) comes before its pipes close, not always before "exit".
    const drained = Promise.all([child.stdout!, child.stderr!].map((s) => new Promise<void>((r) => (s.readableEnded || s.destroyed ? r() : s.once("close", () => r())))));
    child.on("message", (message: FromHost) => {
      if (message.type === "ready") {
        this.#send(host, { type: "init", logMaxBytes: this.#o.logMaxBytes, secrets: this.#o.secrets });
        const files = this.#o.preload?.() ?? [];
        if (files.length) this.#send(host, { type: "preload", files });
        markReady(true);
      }
      else if (message.type === "crash") host.crash = { name: message.name, message: message.message };
      else host.onMessage?.(message);
    });
    child.on("error", (error) => {
      host.stderrTail += `\n${error.message}`;
    });
    child.on("exit", (code, signal) => {
      host.dead = true;
      signalGroup(child.pid, "SIGKILL");
      void Promise.race([drained, new Promise((r) => setTimeout(r, DRAIN_MS))]).then(() => {
        this.#hosts.delete(host);
        this.#lastTail = host.stderrTail;
        markReady(false);
        host.onExit?.(code, signal);
        this.#waiting.shift()?.();
      });
    });
    this.#hosts.add(host);
    return host;
  }

  #send(host: Host, message: ToHost): void {
    if (host.dead || !host.child.connected) return;
    try {
      host.child.send(message);
    } catch {
      // the host is leaving; its exit settles the attempt
    }
  }

  #kill(host: Host): void {
    if (host.dead) return;
    signalGroup(host.child.pid, "SIGKILL");
  }
}

function crashResult(host: Host, code: number | null, signal: NodeJS.Signals | null, memoryMb: number | undefined): AttemptResult {
  const tail = host.stderrTail;
  let message: string;
  if (host.crash) message = `${host.crash.name}: ${host.crash.message} (thrown outside the task's promise)`;
  else if (/heap out of memory|Allocation failed/i.test(tail)) {
    message = `the task ran out of memory${memoryMb ? ` (taskMemoryMb: ${memoryMb})` : ""}`;
  } else if (signal) message = `the task's process was killed by ${signal}${lastLine(tail) ? `: ${lastLine(tail)}` : ""}`;
  else message = `the task's process exited with code ${code} before the task returned (process.exit?)`;
  return { outcome: "failed", errorClass: ErrorClass.TaskCrashed, errorMessage: message, retryable: true, exitCode: code };
}

function lastLine(text: string): string {
  return text.trim().split("\n").filter((l) => l.trim()).at(-1)?.trim().slice(0, 300) ?? "";
}
