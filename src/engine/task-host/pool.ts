import type { TaskHostsStatus } from "../events/process-status.ts";
import type { EngineEvents } from "../events/engine-events.ts";
import type { ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { formatDuration } from "../../core/time/duration.ts";
import type { ClaimedAttempt } from "../../store/port.ts";
import type { AttemptResult } from "../executor/attempt-result.ts";
import type { TaskCodeCall } from "../executor/task-code-runner.ts";
import { NO_MAPPED_PAGES } from "../executor/task-context.ts";
import { stopReason } from "../executor/stop-reason.ts";
import { signalGroup, spawnSupervised } from "../executor/supervised-spawn.ts";
import type { AttemptToRun, FromHost, ToHost } from "./protocol.ts";
import { RawOutput } from "./raw-output.ts";
import { hostActivity } from "./host-activity.ts";
import { SecretMasker } from "../secrets/masker.ts";
import { ErrorClass } from "../../core/model/error-classes.ts";
import { GROW_AFTER_MS, TASK_HOST_WINDOW, taskHostsToStart } from "../../core/policy/task-host-growth.ts";

export interface TaskHostPoolOptions {
  /** Hosts alive at most: one per attempt the worker runs at once. */
  size: number;
  /** How long a host beyond the first may stay idle before it is retired (`IDLE_HOST_MS` by default). */
  idleHostMs?: number;
  /** The project folder: hosts run there. */
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** The V8 heap limit of each host (--max-old-space-size); a task beyond it crashes its host only. */
  memoryMb?: number;
  logMaxBytes: number | null;
  secrets: readonly string[];
  /** Where hosts starting and exiting are told. */
  events?: EngineEvents;
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

/** On close: how long an idle host may take to exit by itself before it is killed. */
const CLOSE_MS = 1_000;

/** After a host exits: how long its last output may take to arrive before the attempt is settled without it. */
const DRAIN_MS = 1_000;

/** One attempt's task code, as a task host is asked to run it: the pipeline named by its file and version. */
export type HostCall = Omit<TaskCodeCall, "pipeline" | "task" | "log"> & { file: string; version: string };

/**
 * Attempts that may wait inside one host behind the one it runs, sent in one message when the
 * host has none waiting: a host is woken once for several short attempts, not once for each.
 */
export const MAX_WAITING_PER_HOST = 4;

/**
 * An attempt waits inside a host behind a running one for at most about this long while another
 * host could take it: then it is withdrawn and given to that host. So a slow task holds the
 * attempts behind it for this long at most, not for its whole run.
 */
export const WAIT_BEHIND_MS = 50;

/** A host that ran long without sleeping is looked at again this much later: computing, or waiting for a core. */
const PROBE_MS = 20;

/** A host beyond the first that has run nothing for this long leaves (it holds its memory). */
export const IDLE_HOST_MS = 60_000;

type Stop = { errorClass: ErrorClass; message: string };

const CLOSING: Stop = { errorClass: ErrorClass.Cancelled, message: "cancelled: the task hosts are closing" };

/** An attempt given to the pool, from the call until its result. */
interface Hosted {
  request: HostCall;
  id: number;
  resolve: (result: AttemptResult) => void;
  /** When the pool was given it (`Date.now()`): how long it has waited for a host. */
  givenAt: number;
  /** Taken back from behind a slow attempt: it gets a host at once, a new one if none is idle. */
  urgent: boolean;
  /** The host it was sent to (running or waiting there); null while the pool holds it. */
  host: Host | null;
  /** Its task code runs (or ran) on `host`: it was first in the host's list. */
  started: boolean;
  startedAt: number;
  /** Why it must stop, asked before it started: applied when it starts, or instead. */
  stopAsked: Stop | null;
  /** Why it is being stopped while it runs. */
  stopping: Stop | null;
  /** Its host said its task code has run `BUSY_AFTER_MS`. */
  busy: boolean;
  settled: boolean;
  timers: NodeJS.Timeout[];
  timeoutStarted: boolean;
  onCancel: () => void;
}

interface Host {
  child: ChildProcess;
  ready: boolean;
  generation: number;
  dead: boolean;
  /** We killed it (retired, closing, a stop): its end is no failure of its own. */
  killed: boolean;
  /** What the host holds, in its order: the first runs, the others wait behind it. */
  attempts: Hosted[];
  /** Withdrawals asked and not answered yet (attempt ids). */
  withdrawing: Set<number>;
  /** The last bytes the host wrote to stderr: why it crashed, when it did. */
  stderrTail: string;
  crash: { name: string; message: string } | null;
  /** Where the host's own output goes while an attempt runs on it (its log, bounded). */
  output: RawOutput | null;
  waitTimer: NodeJS.Timeout | null;
  /** When its last attempt ended (or it came up): how long it has been idle. */
  idleSince: number;
  /** The host's own process id (the child is its supervising shell), told when it is up. */
  pid: number | null;
  /** Its CPU (ticks) when its running attempt was first seen running long while it did not sleep. */
  cpuWhenLong: number | null;
}

const here = fileURLToPath(import.meta.url);
const HOST_MAIN = fileURLToPath(new URL(`./host-main${extname(here)}`, import.meta.url));
/**
 * Hosts import pipeline files from the compiled copies (`project/typescript-cache.ts`), so a host
 * of idem as shipped (dist/) boots with no loader thread. Only idem run from its own TypeScript
 * (this repository's tests and benchmarks) needs tsx in the host from its first line.
 */
const BOOT_LOADER = extname(here) === ".ts" || process.execArgv.includes("--conditions=idem-source")
  ? ["--import", createRequire(import.meta.url).resolve("tsx")]
  : [];

/**
 * Long-lived child processes that run task code, one attempt at a time each. Why processes and
 * not threads: a native crash, `process.exit()` or an out-of-memory abort ends only the host;
 * a busy loop is stopped by killing it; and a fresh host imports the pipeline files as they are
 * now, which is how changed files reach task code without a restart.
 *
 * Attempts given beyond the hosts that are free wait in the pool, then in a host's list (at most
 * `MAX_WAITING_PER_HOST` behind the one it runs, sent together): a host runs them one after
 * another, each result sent as it ends. Each attempt's timeout counts from its own start; a stop
 * (cancel, lease lost) stops exactly that attempt, or withdraws it if it has not started; a host
 * that dies costs only the attempt it was running: those waiting behind it go to another host,
 * on the same try.
 */
export class TaskHostPool {
  readonly #o: TaskHostPoolOptions;
  readonly #masker: SecretMasker;
  readonly #hosts = new Set<Host>();
  /** Given to the pool and not sent to a host yet, in order. */
  readonly #pending: Hosted[] = [];
  #dispatchSoon = false;
  #generation = 0;
  #closed = false;
  #lastTail = "";
  /** When a host last came up: attempts count their wait for a host from then at the earliest. */
  #lastReadyAt = 0;
  #growTimer: NodeJS.Timeout | null = null;
  /** How long the latest attempts' task code ran (ms, as their hosts measured it), oldest first. */
  readonly #recentCodeMs: number[] = [];
  #idleSweep: NodeJS.Timeout | null = null;

  constructor(options: TaskHostPoolOptions) {
    this.#o = options;
    this.#masker = new SecretMasker(options.secrets);
  }

  /** Attempts the pool can hold beyond those its hosts run: what may wait in hosts' lists. */
  get waitingRoom(): number {
    return this.#o.size * MAX_WAITING_PER_HOST;
  }

  /** Pipeline files changed: hosts that imported the old ones leave (busy ones after their attempt). */
  retire(): void {
    this.#generation++;
    for (const host of this.#hosts) {
      if (host.attempts.length === 0) this.#kill(host);
      else this.#withdraw(host, host.attempts.filter((h) => !h.started));
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#growTimer) clearTimeout(this.#growTimer);
    if (this.#idleSweep) clearInterval(this.#idleSweep);
    for (const hosted of this.#pending.splice(0)) this.#settle(hosted, notStarted(CLOSING));
    const exits = [...this.#hosts].map((h) => new Promise<void>((r) => (h.dead ? r() : h.child.once("exit", () => r()))));
    // An idle host leaves by itself when its channel closes (it exits 0, so a profiler or an
    // exit hook in it gets to finish); one that does not, or is busy, is killed.
    for (const host of this.#hosts) {
      if (host.attempts.length > 0 || !host.child.connected) this.#kill(host);
      else host.child.disconnect();
    }
    const left = setTimeout(() => {
      for (const host of this.#hosts) this.#kill(host);
    }, CLOSE_MS);
    await Promise.all(exits);
    clearTimeout(left);
  }

  /** The pool now (`Engine.processStatus()`). */
  status(): TaskHostsStatus {
    let busy = 0;
    for (const host of this.#hosts) if (host.attempts.some((a) => a.started)) busy++;
    return { part: "task-hosts", state: this.#closed ? { kind: "closed" } : { kind: "open" }, hosts: this.#hosts.size, busy, pending: this.#pending.length };
  }

  /** Hosts alive now (idle or busy). */
  get size(): number {
    return this.#hosts.size;
  }

  /** Starts hosts ahead of the first attempt, so it does not wait for one to boot. */
  warm(count = 1): void {
    while (this.#hosts.size < Math.min(count, this.#o.size)) this.#spawn();
  }

  call(request: HostCall): Promise<AttemptResult> {
    return new Promise<AttemptResult>((resolve) => {
      const hosted: Hosted = {
        request, id: request.claim.attemptId, resolve, givenAt: Date.now(), urgent: false, busy: false, host: null, started: false, startedAt: 0, stopAsked: null, stopping: null,
        settled: false, timers: [], timeoutStarted: false, onCancel: () => this.#cancel(hosted, stopReason(request.cancel!)),
      };
      if (request.cancel?.aborted) return resolve(notStarted(stopReason(request.cancel)));
      request.cancel?.addEventListener("abort", hosted.onCancel, { once: true });
      this.#pending.push(hosted);
      this.#soon();
    });
  }

  /** Calls given in one turn (a worker starting several attempts) are sent together. */
  #soon(): void {
    if (this.#dispatchSoon) return;
    this.#dispatchSoon = true;
    queueMicrotask(() => {
      this.#dispatchSoon = false;
      this.#dispatch();
    });
  }

  /**
   * Sends what the pool holds: first one attempt to each idle host, then, to hosts with none
   * waiting, up to `MAX_WAITING_PER_HOST` each (in one message per host); starts hosts for
   * attempts left that have waited `GROW_AFTER_MS` (see `#grow`).
   */
  #dispatch(): void {
    if (this.#closed) return;
    const usable = this.#usable();
    const batches = new Map<Host, Hosted[]>();
    const give = (host: Host, hosted: Hosted) => {
      const batch = batches.get(host);
      if (batch) batch.push(hosted);
      else batches.set(host, [hosted]);
    };
    for (const host of usable) {
      if (this.#pending.length === 0) break;
      if (host.attempts.length === 0) give(host, this.#pending.shift()!);
    }
    this.#grow();
    // Attempts left for hosts that are starting wait for them; the rest wait behind a running one.
    const booting = this.#booting();
    for (const host of usable) {
      if (this.#pending.length <= booting) break;
      const held = host.attempts.length + (batches.get(host)?.length ?? 0);
      if (held !== 1 || host.attempts[0]?.stopping) continue;
      const share = Math.min(MAX_WAITING_PER_HOST, Math.ceil((this.#pending.length - booting) / usable.length));
      for (let i = 0; i < share && this.#pending.length > booting; i++) give(host, this.#pending.shift()!);
    }
    for (const [host, given] of batches) this.#send(host, given);
    this.#rebalance(usable);
  }

  /**
   * Starts the hosts the attempts left in the pool need (`taskHostsToStart`: as many as the work
   * needs, up to `size`); looks again when one of them will have waited `GROW_AFTER_MS`.
   */
  #grow(): void {
    if (this.#pending.length === 0 || this.#hosts.size >= this.#o.size) return;
    const now = Date.now();
    let current = 0;
    let up = 0;
    let longest: Host | null = null;
    for (const host of this.#hosts) {
      if (!this.#current(host)) continue;
      current++;
      if (!host.ready) continue;
      up++;
      const head = host.attempts[0];
      if (head?.started && (!longest || head.startedAt < longest.attempts[0]!.startedAt)) longest = host;
    }
    let urgent = 0;
    let waitedLong = 0;
    let soonest = Infinity;
    for (const hosted of this.#pending) {
      // Until a host is up, attempts wait for its boot, not for the hosts' work.
      const since = Math.max(hosted.givenAt, this.#lastReadyAt);
      if (hosted.urgent) urgent++;
      else if (up > 0 && now - since >= GROW_AFTER_MS) waitedLong++;
      else if (up > 0) soonest = Math.min(soonest, since + GROW_AFTER_MS);
    }
    // The longest-running attempt counts only if its task code holds its host (not a host waiting for a core).
    const longestMs = longest ? now - longest.attempts[0]!.startedAt : 0;
    const longestRunningMs = waitedLong > 0 && longestMs >= GROW_AFTER_MS && this.#heldByTask(longest!) ? longestMs : 0;
    const start = taskHostsToStart({
      size: this.#o.size, alive: this.#hosts.size, current, booting: this.#booting(), waiting: this.#pending.length, urgent, waitedLong,
      recentCodeMs: this.#recentCodeMs, longestRunningMs,
    });
    for (let i = 0; i < start; i++) this.#spawn();
    if (up === 0 || this.#growTimer || this.#hosts.size >= this.#o.size) return;
    // Attempts still wait: look again when the next one has waited long enough, or the running ones run long.
    this.#growTimer = setTimeout(() => {
      this.#growTimer = null;
      setImmediate(() => this.#dispatch()); // after the results that came meanwhile are read
    }, Math.max(1, Math.min(soonest, now + GROW_AFTER_MS) - now));
    this.#growTimer.unref();
  }

  /** Hosts beyond the first that have been idle `idleHostMs` leave; the sweep stops when one host is left. */
  #sweepIdle(): void {
    const idleMs = this.#o.idleHostMs ?? IDLE_HOST_MS;
    if (this.#idleSweep || this.#hosts.size < 2 || this.#closed) return;
    this.#idleSweep = setInterval(() => {
      const now = Date.now();
      let kept = 0;
      for (const host of this.#hosts) {
        if (!this.#current(host)) continue;
        if (host.attempts.length > 0 || now - host.idleSince < idleMs || kept === 0) kept++;
        else this.#kill(host);
      }
      if (kept < 2) {
        clearInterval(this.#idleSweep!);
        this.#idleSweep = null;
      }
    }, Math.max(1, Math.floor(idleMs / 4)));
    this.#idleSweep.unref();
  }

  /** Alive, not being killed, and of the pipelines' current version. */
  #current(host: Host): boolean {
    return !host.killed && !host.dead && host.generation === this.#generation;
  }

  /** Hosts that may be given attempts now: current, and up. */
  #usable(): Host[] {
    return [...this.#hosts].filter((h) => h.ready && this.#current(h));
  }

  #booting(): number {
    let n = 0;
    for (const host of this.#hosts) if (!host.ready && !host.dead) n++;
    return n;
  }

  #send(host: Host, given: Hosted[]): void {
    const wasIdle = host.attempts.length === 0;
    for (const hosted of given) {
      hosted.host = host;
      hosted.urgent = false;
      host.attempts.push(hosted);
    }
    this.#message(host, { type: "run", attempts: given.map((h) => toRun(h.request)) });
    if (wasIdle) this.#begin(host);
    else this.#armWait(host);
  }

  /** The host's first attempt starts now (it was sent to an idle host, or the one before it ended). */
  #begin(host: Host): void {
    const hosted = host.attempts[0];
    if (!hosted) return;
    hosted.started = true;
    hosted.startedAt = Date.now();
    host.cpuWhenLong = null;
    host.withdrawing.delete(hosted.id);
    host.output?.close();
    host.output = new RawOutput(hosted.request.claim.logPath, this.#o.logMaxBytes, this.#masker);
    hosted.request.onStarted?.();
    // The timeout counts from the call of the task code; a file that takes too long to load starts it anyway.
    if (hosted.request.timeoutMs !== null) this.#later(hosted, LOAD_ALLOWANCE_MS, () => this.#startTimeout(hosted));
    if (hosted.stopAsked) this.#stop(hosted, hosted.stopAsked);
    this.#armWait(host);
  }

  /** Attempts wait behind this host's running one: look again once they have waited long enough. */
  #armWait(host: Host, ms = WAIT_BEHIND_MS): void {
    if (host.waitTimer || host.attempts.length < 2) return;
    host.waitTimer = setTimeout(() => {
      host.waitTimer = null;
      // After the messages that came meanwhile are read: a result waiting in the pipe is no slow task.
      setImmediate(() => this.#rebalance(this.#usable()));
    }, ms);
  }

  /**
   * Whether the task code running on `host` for `WAIT_BEHIND_MS` holds it: the host said it has
   * run `BUSY_AFTER_MS` (task code that awaits I/O or a timer), or it computes (a busy loop lets
   * the host say nothing: it gained CPU since this was first asked). A host that got no CPU
   * waits for a core, or its result is on its way: the machine is busy, and another host would
   * only wait with it. Where the kernel cannot be asked, the time alone says so.
   */
  #heldByTask(host: Host): boolean {
    if (host.attempts[0]?.busy) return true;
    const activity = hostActivity(host.pid);
    if (!activity) return true;
    if (activity.asleep) return false;
    if (host.cpuWhenLong === null) {
      host.cpuWhenLong = activity.cpuTicks;
      return false;
    }
    return activity.cpuTicks > host.cpuWhenLong;
  }

  /**
   * Idle hosts (or room for new ones) while attempts wait behind one that has run for
   * `WAIT_BEHIND_MS`: take those back, to give them to the idle hosts.
   */
  #rebalance(usable: Host[]): void {
    const idle = usable.filter((h) => h.attempts.length === 0).length + (this.#o.size - this.#hosts.size);
    if (idle === 0 || this.#pending.length > 0) return;
    const now = Date.now();
    let room = idle;
    for (const host of this.#hosts) {
      if (room <= 0) break;
      const head = host.attempts[0];
      const behind = host.attempts.filter((h) => !h.started && !host.withdrawing.has(h.id));
      if (!head?.started || behind.length === 0) continue;
      if (now - head.startedAt < WAIT_BEHIND_MS) {
        this.#armWait(host);
        continue;
      }
      if (!this.#heldByTask(host)) {
        this.#armWait(host, PROBE_MS); // look again: computing, or waiting for a core
        continue;
      }
      const taken = behind.slice(-room);
      room -= taken.length;
      for (const hosted of taken) hosted.urgent = true;
      this.#withdraw(host, taken);
    }
  }

  #withdraw(host: Host, hosted: Hosted[]): void {
    const ids = hosted.map((h) => h.id).filter((id) => !host.withdrawing.has(id));
    if (ids.length === 0) return;
    for (const id of ids) host.withdrawing.add(id);
    this.#message(host, { type: "withdraw", attemptIds: ids });
  }

  /** The host gave these back unstarted: stopped ones end here, the others go to another host. */
  #withdrawn(host: Host, ids: readonly number[]): void {
    const back: Hosted[] = [];
    for (const id of ids) {
      host.withdrawing.delete(id);
      const at = host.attempts.findIndex((h) => h.id === id);
      if (at <= 0) continue; // never the running one
      const [hosted] = host.attempts.splice(at, 1);
      back.push(hosted!);
    }
    this.#requeue(back);
  }

  /** Attempts that never started on their host: stopped ones end, the others are sent again first. */
  #requeue(hosted: Hosted[]): void {
    const again = hosted.filter((h) => {
      h.host = null;
      h.started = false;
      const stop = h.stopAsked ?? (this.#closed ? CLOSING : null);
      if (!stop) return true;
      this.#settle(h, notStarted(stop));
      return false;
    });
    if (again.length === 0) return;
    this.#pending.unshift(...again);
    this.#soon();
  }

  #cancel(hosted: Hosted, why: Stop): void {
    if (hosted.settled) return;
    if (!hosted.host) {
      this.#pending.splice(this.#pending.indexOf(hosted), 1);
      return this.#settle(hosted, notStarted(why));
    }
    if (hosted.started) return this.#stop(hosted, why);
    // Waiting in a host: taken back if it has not started there, stopped when it starts if it has.
    hosted.stopAsked = why;
    this.#withdraw(hosted.host, [hosted]);
  }

  #stop(hosted: Hosted, why: Stop): void {
    const host = hosted.host!;
    if (hosted.stopping || hosted.settled) return;
    hosted.stopping = why;
    // A lost lease leaves no time for grace: the retry may start any moment.
    if (why.errorClass === ErrorClass.LeaseLost) return this.#kill(host);
    this.#message(host, { type: "abort", attemptId: hosted.id, errorClass: why.errorClass, message: why.message });
    this.#later(hosted, hosted.request.graceMs, () => {
      // The task did not honour its signal (a busy loop, a call that ignores it): end its process.
      hosted.stopping = { ...why, message: `${why.message}; it did not stop within ${formatDuration(hosted.request.graceMs)} of its signal, so its process was killed` };
      this.#kill(host);
    });
  }

  #startTimeout(hosted: Hosted): void {
    if (hosted.request.timeoutMs === null || hosted.timeoutStarted) return;
    hosted.timeoutStarted = true;
    const timeoutMs = hosted.request.timeoutMs;
    this.#later(hosted, timeoutMs, () => this.#stop(hosted, { errorClass: ErrorClass.Timeout, message: `timed out after ${formatDuration(timeoutMs)}` }));
  }

  // Plain timers, not AbortSignals: this is the per-task path, and aborting a signal is not cheap.
  #later(hosted: Hosted, ms: number, fn: () => void): void {
    hosted.timers.push(setTimeout(() => !hosted.settled && fn(), ms));
  }

  #settle(hosted: Hosted, result: AttemptResult): void {
    if (hosted.settled) return;
    hosted.settled = true;
    for (const timer of hosted.timers) clearTimeout(timer);
    hosted.request.cancel?.removeEventListener("abort", hosted.onCancel);
    hosted.resolve(result);
  }

  /** The host's running attempt ended (its result, or its host's death): the next one it holds starts. */
  #ended(host: Host, result: AttemptResult): void {
    const hosted = host.attempts.shift();
    if (!hosted) return;
    host.idleSince = Date.now();
    host.output?.close();
    host.output = null;
    if (host.waitTimer) clearTimeout(host.waitTimer);
    host.waitTimer = null;
    this.#settle(hosted, hosted.stopping ? failedAsStopped(hosted.stopping) : result);
    if (host.dead) return;
    if (host.attempts.length > 0) this.#begin(host);
    else if (host.generation !== this.#generation || this.#closed) this.#kill(host);
    this.#soon();
  }

  #onMessage(host: Host, message: FromHost): void {
    if (message.type === "done") {
      if (message.codeMs !== undefined) {
        this.#recentCodeMs.push(message.codeMs);
        if (this.#recentCodeMs.length > TASK_HOST_WINDOW) this.#recentCodeMs.shift();
      }
      if (host.attempts[0]?.id === message.attemptId) this.#ended(host, message.result);
    } else if (message.type === "withdrawn") this.#withdrawn(host, message.attemptIds);
    else if (message.type === "busy") {
      const hosted = host.attempts[0];
      if (hosted?.id === message.attemptId) hosted.busy = true;
    } else if (message.type === "started") {
      const hosted = host.attempts[0];
      if (hosted?.id === message.attemptId) this.#startTimeout(hosted);
    } else if (message.type === "mapped") {
      const hosted = host.attempts[0];
      if (!hosted) return;
      (hosted.request.mapped ?? NO_MAPPED_PAGES)(message.taskId, message.after, message.limit).then(
        (page) => this.#message(host, { type: "mapped-reply", id: message.id, page }),
        (error: Error) => this.#message(host, { type: "mapped-reply", id: message.id, error: error.message }),
      );
    } else if (message.type === "watermark") {
      const hosted = host.attempts[0];
      if (!hosted) return;
      const op = message.op === "get"
        ? hosted.request.watermarks.get(message.pipelineId, message.taskId)
        : hosted.request.watermarks.save(message.pipelineId, message.taskId, message.value!).then(() => null);
      op.then(
        (value) => this.#message(host, { type: "watermark-reply", id: message.id, value }),
        (error: Error) => this.#message(host, { type: "watermark-reply", id: message.id, error: error.message }),
      );
    }
  }

  /** A host left: its running attempt fails (crashed, or stopped as asked); those behind it go to another host. */
  #onExit(host: Host, code: number | null, signal: NodeJS.Signals | null): void {
    this.#hosts.delete(host);
    this.#lastTail = host.stderrTail;
    if (!host.ready && !host.killed && this.#pending.length > 0 && !this.#closed) {
      // It never started: the first attempt waiting for a host fails, so a host that cannot start is not retried forever.
      const hosted = this.#pending.shift()!;
      this.#settle(hosted, { outcome: "failed", errorClass: ErrorClass.TaskCrashed, errorMessage: `the task host did not start: ${lastLine(this.#lastTail)}`, retryable: true, exitCode: null });
    }
    const running = host.attempts[0]?.started ? host.attempts[0] : null;
    if (running) this.#ended(host, crashResult(host, code, signal, this.#o.memoryMb));
    this.#requeue(host.attempts.splice(0));
    this.#soon();
  }

  #spawn(): Host {
    const argv = [
      process.execPath,
      // Resolve packages (and "idem" itself) the way this process does.
      ...process.execArgv.filter((a) => a.startsWith("--conditions=")),
      ...(this.#o.memoryMb ? [`--max-old-space-size=${this.#o.memoryMb}`] : []),
      ...BOOT_LOADER, HOST_MAIN, `--nice=${TASK_HOST_NICENESS}`,
    ];
    const child = spawnSupervised(argv, { cwd: this.#o.cwd, env: this.#o.env ?? process.env, stdout: "pipe", stderr: "pipe", ipc: true });
    const host: Host = {
      child, ready: false, generation: this.#generation, dead: false, killed: false, attempts: [], withdrawing: new Set(),
      stderrTail: "", crash: null, output: null, waitTimer: null, idleSince: 0, pid: null, cpuWhenLong: null,
    };
    // Task code's console is in its log already (the host captures it); what comes here is
    // written below it (the runtime's out-of-memory report, native code, child processes): it
    // belongs to the attempt, if one runs, bounded like the rest of its log.
    const forward = (to: NodeJS.WriteStream) => (chunk: Buffer) => {
      if (host.output) host.output.write(chunk);
      else to.write(chunk);
    };
    child.stdout!.on("data", (chunk: Buffer) => {
      if (host.output || !this.#o.events?.heard("host:output")) forward(process.stdout)(chunk);
      else this.#o.events.emit("host:output", { pid: host.pid ?? child.pid ?? 0, text: chunk.toString("utf8") });
    });
    child.stderr!.on("data", forward(process.stderr));
    child.stderr!.on("data", (chunk: Buffer) => (host.stderrTail = (host.stderrTail + chunk.toString("utf8")).slice(-4096)));
    // The last output (why the host died) comes before its pipes close, not always before "exit".
    const drained = Promise.all([child.stdout!, child.stderr!].map((s) => new Promise<void>((r) => (s.readableEnded || s.destroyed ? r() : s.once("close", () => r())))));
    child.on("message", (message: FromHost) => {
      if (message.type === "ready") {
        host.pid = message.pid;
        this.#message(host, { type: "init", logMaxBytes: this.#o.logMaxBytes, secrets: this.#o.secrets, projectDir: this.#o.cwd });
        const files = this.#o.preload?.() ?? [];
        if (files.length) this.#message(host, { type: "preload", files });
        host.ready = true;
        host.idleSince = this.#lastReadyAt = Date.now();
        this.#o.events?.emit("host:started", { pid: message.pid, hosts: this.#hosts.size });
        this.#sweepIdle();
        this.#dispatch();
      }
      else if (message.type === "crash") host.crash = { name: message.name, message: message.message };
      else this.#onMessage(host, message);
    });
    child.on("error", (error) => {
      host.stderrTail += `\n${error.message}`;
    });
    child.on("exit", (code, signal) => {
      host.dead = true;
      if (this.#o.events) {
        let alive = 0;
        for (const h of this.#hosts) if (!h.dead) alive++;
        this.#o.events.emit("host:exited", { pid: host.pid ?? child.pid ?? 0, code, signal, expected: host.killed || this.#closed, hosts: alive });
      }
      if (host.waitTimer) clearTimeout(host.waitTimer);
      signalGroup(child.pid, "SIGKILL");
      void Promise.race([drained, new Promise((r) => setTimeout(r, DRAIN_MS))]).then(() => this.#onExit(host, code, signal));
    });
    this.#hosts.add(host);
    return host;
  }

  #message(host: Host, message: ToHost): void {
    if (host.dead || !host.child.connected) return;
    try {
      host.child.send(message);
    } catch {
      // the host is leaving; its exit settles the attempt
    }
  }

  #kill(host: Host): void {
    if (host.dead) return;
    host.killed = true;
    signalGroup(host.child.pid, "SIGKILL");
  }
}

function toRun(request: HostCall): AttemptToRun {
  return {
    file: request.file,
    version: request.version,
    claim: request.claim,
    projectFrozen: request.projectFrozen,
    connections: request.connections,
    upstream: request.upstream,
    traceparent: request.traceparent,
    projectDir: request.projectDir,
    timed: request.timeoutMs !== null,
    ...(request.external === undefined ? {} : { external: request.external }),
  };
}

function failedAsStopped(why: Stop): AttemptResult {
  return { outcome: "failed", errorClass: why.errorClass, errorMessage: why.message, retryable: true, exitCode: null };
}

/** Stopped before its task code started: nothing ran, so nothing of it is lost. */
function notStarted(why: Stop): AttemptResult {
  return failedAsStopped({ errorClass: why.errorClass, message: `${why.message} (before it started)` });
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
