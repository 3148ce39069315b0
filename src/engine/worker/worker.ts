import { hostname } from "node:os";
import { join } from "node:path";
import { systemClock, type Clock } from "../../core/model/clock.ts";
import { retryWithBackoff } from "../../core/policy/backoff.ts";
import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import type { AttemptFinish, ClaimLimits, ClaimedAttempt, Store } from "../../store/port.ts";
import { executeAttempt } from "../executor/execute-attempt.ts";
import { storeWatermarks } from "../executor/watermarks.ts";
import { upstreamSummaries } from "../executor/upstream.ts";
import type { ConnectionConfig } from "../project/config.ts";
import { realSleep } from "../executor/real-sleep.ts";
import { announceFinish, notifyWork, subscribeToWork } from "./wakeup.ts";
import { inlineRunner, type TaskCodeRunner } from "../executor/task-code-runner.ts";
import { stopError } from "../executor/stop-reason.ts";
import type { SecretMasker } from "../secrets/masker.ts";
import type { PipelineCatalog } from "../project/catalog.ts";
import { ErrorClass } from "../../core/model/error-classes.ts";
import { nextToStart } from "../../core/policy/prefetch-order.ts";
import { AUTO_PREFETCH_WINDOW, prefetchDepth, type Prefetch } from "../../core/policy/prefetch-depth.ts";

export interface WorkerOptions {
  store: Store;
  clock: Clock;
  pipelines: readonly Pipeline[];
  stateDir: string;
  workerId: string;
  /** Attempts this worker runs at once. */
  concurrency: number;
  /**
   * Attempts claimed ahead of free slots, kept in a local queue and started as slots free, so a
   * claim (the costly step) takes many at once. Each holds its lease (renewed) and its pool slots
   * while it waits. "auto": twice the concurrency while the recent task code was short, else
   * none (core's prefetchDepth). Default 0: claim only for free slots.
   */
  prefetch?: Prefetch;
  /** Where command tasks run when they name no cwd. */
  projectDir?: string;
  /** A lease not renewed for this long marks the worker dead. Default 30 s; renewed every third. */
  leaseMs?: number;
  limits?: ClaimLimits;
  /** Work on this run only (an in-process `idem run`). */
  runId?: string;
  /** Work on this backfill's runs only (`idem backfill` running it with no scheduler about). */
  backfillId?: string;
  /** Longest wait between looks for work when nothing wakes the worker. Default 500 ms. */
  pollMs?: number;
  /** On shutdown: how long running attempts may take to finish before they are handed back. */
  graceMs?: number;
  random?: () => number;
  /** Frozen periods of the whole project, handed to task code for its loaders. */
  frozen?: readonly FrozenPeriod[];
  /** The project's named connections (idem.config.ts), for SQL tasks and `ctx.connection`. */
  connections?: Record<string, ConnectionConfig>;
  log?: (line: string) => void;
  onAttempt?: (claim: ClaimedAttempt, outcome: { taskState: string | null; errorMessage: string | null }) => void;
  /** Where task code runs. Default: in this process (only for pipelines with no file). */
  runner?: TaskCodeRunner;
  /** The pipelines as files say now: refreshed while the worker runs. Overrides `pipelines`. */
  catalog?: PipelineCatalog;
  logMaxBytes?: number | null;
  masker?: SecretMasker;
  /** Variables commands do not inherit unless they name them (the state URL and password). */
  withheldEnv?: readonly string[];
}

/** How long a handed-back attempt waits before it may be claimed again (by anyone). */
const HAND_BACK_DELAY_MS = 1_000;

/**
 * Claims eligible task instances and runs them, many at a time, in this long-lived process:
 * pipeline code is imported once, so a function task starts with no process start. Each attempt
 * holds a lease renewed by heartbeat; results are recorded fenced by the attempt id.
 */
export class Worker {
  readonly #o: WorkerOptions & { leaseMs: number; pollMs: number; graceMs: number; prefetch: Prefetch };
  readonly #pipelines: Map<string, Pipeline>;
  /** Attempts started and not yet recorded (task code running, or its result being recorded). */
  readonly #inFlight = new Map<number, Promise<void>>();
  /**
   * Per attempt this worker holds (running or claimed ahead): until when its lease is known to
   * hold, and how to stop it once it runs (null while it waits in the queue).
   */
  readonly #leases = new Map<number, { stop: AbortController | null; until: number }>();
  /** Claimed ahead of a free slot (`prefetch`), in claim order: not started yet. */
  readonly #queued: ClaimedAttempt[] = [];
  /** Attempts whose task code runs now: what `concurrency` bounds. */
  #running = 0;
  /** Shutting down: nothing more starts, the queue is handed back. */
  #stopping = false;
  readonly #watermarks;
  #wake: () => void = () => (this.#wokenEarly = true);
  /** Work was announced while no one was waiting (during a claim): do not sleep on it. */
  #wokenEarly = false;
  #failure: unknown = null;
  /** How long the latest task code ran (ms), for an "auto" prefetch. */
  readonly #recentRunMs: number[] = [];

  constructor(options: WorkerOptions) {
    this.#o = { leaseMs: 30_000, pollMs: 500, graceMs: 30_000, ...options, prefetch: options.prefetch ?? 0 };
    this.#watermarks = storeWatermarks(options.store, options.clock);
    this.#pipelines = new Map(options.pipelines.map((p) => [p.id, p]));
  }

  #pipeline(id: string): Pipeline | undefined {
    return this.#o.catalog ? this.#o.catalog.get(id) : this.#pipelines.get(id);
  }

  #loadedIds(): string[] | undefined {
    return this.#o.catalog?.pipelines().map((p) => p.id);
  }

  /**
   * Works until `signal` aborts or `done()` says so (checked when nothing is running or
   * claimable). On abort: no new claims; running attempts get the grace period, then are
   * cancelled and handed back without using up a try.
   */
  async run(signal: AbortSignal, done?: () => Promise<boolean>): Promise<void> {
    const { store, clock } = this.#o;
    const stopWatching = await subscribeToWork(store, this.#o.stateDir, () => this.#wake());
    const onAbort = () => {
      this.#stopping = true; // a slot freed from now on starts nothing from the queue
      this.#wake();
    };
    signal.addEventListener("abort", onAbort);
    const heartbeat = setInterval(() => void this.#heartbeat(), Math.max(250, this.#o.leaseMs / 3));
    heartbeat.unref();
    await this.#heartbeat();
    let idlePollMs = 1;
    try {
      while (!signal.aborted) {
        if (this.#failure) throw this.#failure;
        // Let results that already arrived be recorded first, so one claim fills several free
        // slots: claims are the costly step, and task hosts answer one message at a time.
        if (this.#inFlight.size > 0 && this.#running < this.#o.concurrency) await new Promise((r) => setImmediate(r));
        const wanted = this.#wanted();
        let claimed: ClaimedAttempt[] = [];
        if (wanted > 0) {
          const now = clock.now();
          claimed = await this.#retrying("claim", () => store.claimReady({
            workerId: this.#o.workerId,
            pid: process.pid,
            limit: wanted,
            now,
            leaseMs: this.#o.leaseMs,
            runId: this.#o.runId,
            backfillId: this.#o.backfillId,
            limits: this.#o.limits,
            pipelineIds: this.#loadedIds(),
            logDir: join(this.#o.stateDir, "logs"),
          }), signal) ?? [];
          for (const claim of claimed) {
            this.#leases.set(claim.attemptId, { stop: null, until: claim.leaseExpiresAt });
            this.#queued.push(claim);
          }
          this.#startQueued(false);
        }
        if (claimed.length > 0) {
          idlePollMs = 1;
          if (claimed.length === wanted) await this.#untilWoken(0);
          continue;
        }
        if (this.#inFlight.size === 0 && this.#queued.length === 0 && done && (await done())) return;
        await this.#idle(idlePollMs, signal);
        idlePollMs = Math.min(this.#o.pollMs, idlePollMs * 2);
      }
      await this.#handBackQueued();
      await this.#drain();
    } finally {
      clearInterval(heartbeat);
      signal.removeEventListener("abort", onAbort);
      stopWatching();
      await this.#handBackQueued();
      await Promise.allSettled(this.#inFlight.values());
      await store.removeWorker(this.#o.workerId).catch(() => {});
    }
    if (this.#failure) throw this.#failure;
  }

  /**
   * How many to claim now. With no prefetch: the free slots. With prefetch: room up to
   * concurrency + prefetch, but only once the queue is down to half the prefetch, so that each
   * claim takes many (claims are the costly step) rather than one per freed slot.
   */
  #wanted(): number {
    if (this.#stopping) return 0;
    const { concurrency } = this.#o;
    const prefetch = prefetchDepth(this.#o.prefetch, concurrency, this.#recentRunMs);
    if (this.#queued.length > prefetch / 2) return 0;
    return Math.max(0, concurrency + prefetch - this.#running - this.#queued.length);
  }

  /**
   * Starts queued attempts while slots are free: live work first (core's `nextToStart`).
   * `waited`: the attempts sat in the queue past their claim, so their start is recorded as now.
   */
  #startQueued(waited: boolean): void {
    while (!this.#stopping && this.#running < this.#o.concurrency && this.#queued.length > 0) {
      const [claim] = this.#queued.splice(nextToStart(this.#queued), 1);
      this.#start(claim!, waited ? this.#o.clock.now() : undefined);
    }
  }

  /**
   * On shutdown, claimed-ahead attempts that never started go back at once, rescheduled on the
   * same try: claimable again by anyone, as if never claimed.
   */
  async #handBackQueued(): Promise<void> {
    this.#stopping = true;
    const queued = this.#queued.splice(0);
    if (queued.length === 0) return;
    this.#o.log?.(`handing back ${queued.length} claimed attempt(s) that had not started`);
    await Promise.all(queued.map(async (claim) => {
      const finish = this.#handedBack(claim, ErrorClass.Cancelled, "handed back before it started: the worker is shutting down", 0);
      await this.#retrying(`hand back ${claim.runId} ${claim.taskId}`, () => this.#o.store.finishAttempt(finish));
      this.#leases.delete(claim.attemptId);
    }));
    // Claimable now: on SQLite, say so to the other workers (PostgreSQL's finish notified them).
    if (!this.#o.store.watchWork) notifyWork(this.#o.stateDir);
  }

  /** Nothing to claim: sleep until woken, the next retry of our run, or the next poll. */
  async #idle(pollMs: number, signal: AbortSignal): Promise<void> {
    if (this.#inFlight.size > 0) return this.#untilWoken(this.#o.pollMs);
    if (this.#o.runId) {
      const retryAt = await this.#o.store.nextRetryAt(this.#o.runId);
      if (retryAt !== null) {
        await this.#o.clock.sleep(Math.max(0, retryAt - this.#o.clock.now()), signal);
        return;
      }
    }
    return this.#untilWoken(pollMs);
  }

  #untilWoken(maxMs: number): Promise<void> {
    if (this.#wokenEarly) {
      this.#wokenEarly = false;
      return Promise.resolve();
    }
    // A plain timer, not an aborted sleep: this runs once per recorded attempt, and aborting a
    // signal (a DOMException with its stack) costs more than the claim it waits for.
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | NodeJS.Immediate;
      const done = () => {
        if (maxMs > 0) clearTimeout(timer as NodeJS.Timeout);
        else clearImmediate(timer as NodeJS.Immediate);
        this.#wake = () => (this.#wokenEarly = true);
        resolve();
      };
      this.#wake = done;
      timer = maxMs > 0 ? setTimeout(done, maxMs) : setImmediate(done);
    });
  }

  /** `startedAt`: set when the attempt waited in the queue, so its recorded start is its real one. */
  #start(claim: ClaimedAttempt, startedAt: number | undefined): void {
    const stop = new AbortController();
    const lease = this.#leases.get(claim.attemptId);
    if (lease) lease.stop = stop;
    else this.#leases.set(claim.attemptId, { stop, until: claim.leaseExpiresAt });
    this.#running++;
    let running = true;
    const began = this.#o.clock.now();
    // The slot frees when the task code returns, not once its result is recorded: the next
    // queued attempt starts at once, while the result is still being written.
    const freeSlot = () => {
      if (!running) return;
      running = false;
      this.#running--;
      this.#recentRunMs.push(this.#o.clock.now() - began);
      if (this.#recentRunMs.length > AUTO_PREFETCH_WINDOW) this.#recentRunMs.shift();
      this.#startQueued(true);
    };
    const work = (async () => {
      const pipeline = this.#pipeline(claim.pipelineId);
      let finish: AttemptFinish;
      if (!pipeline) {
        // Claimed before a reload dropped it: not ours to judge; someone who has it runs it.
        finish = this.#handBack(claim, `pipeline ${claim.pipelineId} is not loaded by worker ${this.#o.workerId}`);
      } else {
        finish = await executeAttempt(pipeline, claim, {
          clock: this.#o.clock,
          workerId: this.#o.workerId,
          scratchDir: join(this.#o.stateDir, "tmp"),
          defaultCwd: this.#o.projectDir ?? process.cwd(),
          cancel: stop.signal,
          random: this.#o.random,
          frozen: this.#o.frozen,
          watermarks: this.#watermarks,
          connections: this.#o.connections,
          upstreamSummaries: (runId, taskIds) => upstreamSummaries(this.#o.store, runId, taskIds),
          runner: this.#o.runner ?? inlineRunner,
          logMaxBytes: this.#o.logMaxBytes,
          masker: this.#o.masker,
          withheldEnv: this.#o.withheldEnv,
        });
      }
      freeSlot();
      if (startedAt !== undefined) finish = { ...finish, startedAt };
      if (finish.errorClass === ErrorClass.Cancelled) {
        // Handed back on shutdown: the same try runs again elsewhere, at once.
        finish = { ...finish, outcome: "rescheduled", retryAt: this.#o.clock.now() };
      } else if (finish.errorClass === ErrorClass.DefinitionChanged) {
        // The file changed between our load and the task host's: load it again, and let the
        // attempt run on the definition as it is now, without using up a try.
        this.#o.log?.(`${claim.runId} ${claim.taskId}: ${finish.errorMessage}; handing it back and reloading`);
        void this.#o.catalog?.refresh();
        finish = { ...finish, outcome: "rescheduled", retryAt: this.#o.clock.now() + HAND_BACK_DELAY_MS };
      }
      const outcome = await this.#retrying(`record ${claim.runId} ${claim.taskId}`, () => this.#o.store.finishAttempt(finish));
      if (!outcome) return; // the lease will run out and the attempt will be retried elsewhere
      if (outcome.accepted) announceFinish(this.#o.store, this.#o.stateDir, outcome, outcome.taskState === "success" && (finish.datasets?.length ?? 0) > 0);
      else this.#o.log?.(`${claim.runId} ${claim.taskId} try ${claim.tryNumber}: result refused, the attempt is no longer ours`);
      this.#o.onAttempt?.(claim, { taskState: outcome.taskState, errorMessage: finish.errorMessage });
    })()
      .catch((error) => {
        this.#failure ??= error;
      })
      .finally(() => {
        freeSlot();
        this.#inFlight.delete(claim.attemptId);
        this.#leases.delete(claim.attemptId);
        this.#wake();
      });
    this.#inFlight.set(claim.attemptId, work);
  }

  /** An attempt given back untouched: rescheduled, the same try, claimable again shortly. */
  #handBack(claim: ClaimedAttempt, why: string): AttemptFinish {
    this.#o.log?.(`${claim.runId} ${claim.taskId}: ${why}; handing it back`);
    return this.#handedBack(claim, ErrorClass.DefinitionChanged, why, HAND_BACK_DELAY_MS);
  }

  /** The finish of an attempt given back unrun: the same try, claimable again after `delayMs`. */
  #handedBack(claim: ClaimedAttempt, errorClass: ErrorClass, why: string, delayMs: number): AttemptFinish {
    const now = this.#o.clock.now();
    return {
      attemptId: claim.attemptId, workerId: this.#o.workerId, now, outcome: "rescheduled", retryable: false, retryAt: now + delayMs,
      exitCode: null, errorClass, errorMessage: why, summary: null, skipReason: null,
    };
  }

  async #drain(): Promise<void> {
    if (this.#inFlight.size === 0) return;
    this.#o.log?.(`stopping: waiting up to ${this.#o.graceMs} ms for ${this.#inFlight.size} running attempt(s)`);
    const settled = Promise.allSettled(this.#inFlight.values()).then(() => true);
    if (!(await Promise.race([settled, realSleep(this.#o.graceMs).then(() => false)]))) {
      this.#o.log?.(`handing back ${this.#inFlight.size} attempt(s)`);
      const reason = stopError(ErrorClass.Cancelled, "cancelled: worker is shutting down");
      for (const lease of this.#leases.values()) lease.stop?.abort(reason);
      await settled;
    }
  }

  /**
   * A store that is briefly unreachable or busy must not kill the worker: try again with a
   * growing pause for up to a lease's length, then give up: an unrecorded attempt's lease runs
   * out and the scheduler retries it, as if this worker had died.
   */
  async #retrying<T>(what: string, operation: () => Promise<T>, signal?: AbortSignal): Promise<T | undefined> {
    try {
      // Real time, not the injected clock: the store is out of reach for real.
      return await retryWithBackoff(operation, { firstMs: 10, maxMs: 2_000, withinMs: this.#o.leaseMs, clock: systemClock, signal });
    } catch (error) {
      this.#o.log?.(`${what} failed, giving up: ${(error as Error).message}`);
      return undefined;
    }
  }

  /**
   * Renews the worker's record and every running attempt's lease. An attempt whose lease is not
   * ours any more, or that we could not renew for so long that it may soon be taken for lost, is
   * killed now: an attempt never runs past its lease, so its retry never runs beside it.
   */
  async #heartbeat(): Promise<void> {
    const { store, clock, workerId, leaseMs } = this.#o;
    const now = clock.now();
    try {
      await store.heartbeatWorker({ workerId, host: hostname(), pid: process.pid, concurrency: this.#o.concurrency, at: now });
    } catch (error) {
      this.#o.log?.(`heartbeat failed: ${(error as Error).message}`);
    }
    const held = [...this.#leases.keys()];
    if (held.length === 0) return;
    // One statement for every lease held, running or queued.
    let renewed: Set<number> | null = null;
    try {
      renewed = new Set(await store.renewLeases(workerId, held, now + leaseMs));
    } catch (error) {
      this.#o.log?.(`lease renewal of ${held.length} attempt(s) failed: ${(error as Error).message}`);
    }
    for (const attemptId of held) {
      const lease = this.#leases.get(attemptId);
      if (!lease) continue; // recorded meanwhile
      if (renewed?.has(attemptId)) lease.until = now + leaseMs;
      else if (renewed) {
        this.#loseLease(attemptId, lease, "the attempt's lease was taken away (recorded as lost); stopped so that its retry runs alone");
      } else if (lease.until - clock.now() < leaseMs / 3 + 250) {
        this.#loseLease(attemptId, lease, `its lease could not be renewed and runs out at ${new Date(lease.until).toISOString()}; stopped before that`);
      }
    }
  }

  /** A lease not ours any more (or about to run out): a running attempt is killed, a queued one never starts. */
  #loseLease(attemptId: number, lease: { stop: AbortController | null }, why: string): void {
    if (lease.stop) return lease.stop.abort(stopError(ErrorClass.LeaseLost, why));
    const at = this.#queued.findIndex((c) => c.attemptId === attemptId);
    if (at === -1) return;
    const [claim] = this.#queued.splice(at, 1);
    this.#leases.delete(attemptId);
    this.#o.log?.(`${claim!.runId} ${claim!.taskId} try ${claim!.tryNumber}: not started, ${why.replace("; stopped", "; dropped from the queue")}`);
  }
}
