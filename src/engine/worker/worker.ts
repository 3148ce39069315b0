import type { WorkerStatus } from "../events/process-status.ts";
import { hostname } from "node:os";
import { join } from "node:path";
import { systemClock, type Clock } from "../../core/model/clock.ts";
import { retryWithBackoff } from "../../core/policy/backoff.ts";
import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import type { AttemptFinish, ClaimLimits, ClaimRequest, ClaimedAttempt, FinishOutcome, Store } from "../../store/port.ts";
import { executeAttempt, waitsInRunner } from "../executor/execute-attempt.ts";
import { storeWatermarks } from "../executor/watermarks.ts";
import { mappedPage, upstreamSummaries } from "../executor/upstream.ts";
import { cancelRequestedJobs } from "./external-cancels.ts";
import type { ConnectionConfig } from "../project/config.ts";
import { realSleep } from "../executor/real-sleep.ts";
import { announceFinish, notifyWork, subscribeToWork } from "./wakeup.ts";
import { othersMayFindWork } from "../../core/policy/wake-others.ts";
import { inlineRunner, type TaskCodeRunner } from "../executor/task-code-runner.ts";
import { stopError } from "../executor/stop-reason.ts";
import type { SecretMasker } from "../secrets/masker.ts";
import type { PipelineCatalog } from "../project/catalog.ts";
import { ErrorClass } from "../../core/model/error-classes.ts";
import { nextToStart } from "../../core/policy/prefetch-order.ts";
import { AUTO_PREFETCH_WINDOW, prefetchDepth, type Prefetch } from "../../core/policy/prefetch-depth.ts";
import { DEFAULTS } from "../project/defaults.ts";
import { EngineEvents } from "../events/engine-events.ts";
import type { AttemptLocator } from "../events/event-map.ts";
import { codeMissingFinish } from "./code-missing.ts";
import { pinnedCode } from "../project/pinned-code.ts";

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
   * none (core's prefetchDepth). Default here 0, claim only for free slots; `idem worker` passes
   * the config's, whose default is "auto".
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
  /** Where it tells what it does: attempts claimed, started, finished, handed back; what failed. */
  events?: EngineEvents;
  /** Where task code runs. Default: in this process (only for pipelines with no file). */
  runner?: TaskCodeRunner;
  /** The pipelines as files say now: refreshed while the worker runs. Overrides `pipelines`. */
  catalog?: PipelineCatalog;
  logMaxBytes?: number | null;
  masker?: SecretMasker;
  /** Variables commands do not inherit unless they name them (the state URL and password). */
  withheldEnv?: readonly string[];
}

/**
 * An attempt this worker holds (running, given to the runner, or claimed ahead): until when its
 * lease is known to hold, and how to stop it once it left the queue (null before).
 */
interface Lease {
  stop: AbortController | null;
  until: number;
  /** Given to the runner, its task code not started yet. */
  waiting: boolean;
  /** The claim's time: the attempt's recorded start unless its finish says a later one. */
  claimedAt: number;
}

/** An attempt's result waiting for the loop, which records it with its next claim. */
interface Result {
  claim: ClaimedAttempt;
  finish: AttemptFinish;
  recorded: (recorded: Recorded) => void;
}

/** `byLoop`: recorded by the loop with a claim after it, so the loop need not be woken for it. */
interface Recorded {
  outcome: FinishOutcome | undefined;
  byLoop: boolean;
}

/** How long a handed-back attempt waits before it may be claimed again (by anyone). */
const HAND_BACK_DELAY_MS = 1_000;

/**
 * Claims eligible task instances and runs them, many at a time, in this long-lived process:
 * pipeline code is imported once, so a function task starts with no process start. Each attempt
 * holds a lease renewed by heartbeat; results are recorded fenced by the attempt id.
 */
export class Worker {
  readonly #o: WorkerOptions & { leaseMs: number; pollMs: number; graceMs: number; prefetch: Prefetch; events: EngineEvents };
  readonly #pipelines: Map<string, Pipeline>;
  /** Attempts started and not yet recorded (task code running, or its result being recorded). */
  readonly #inFlight = new Map<number, Promise<void>>();
  /**
   * Per attempt this worker holds (running, given to the runner, or claimed ahead): see `Lease`.
   */
  readonly #leases = new Map<number, Lease>();
  /** Claimed ahead of a free slot (`prefetch`), in claim order: not started yet. */
  readonly #queued: ClaimedAttempt[] = [];
  /** Attempts whose task code runs now: what `concurrency` bounds. */
  #running = 0;
  /**
   * Claimed-ahead attempts given to the runner before a slot freed: they wait in a task host's
   * list behind the attempt it runs, and start there when it ends (see `TaskCodeRunner.waitingRoom`).
   */
  #waiting = 0;
  readonly #runner: TaskCodeRunner;
  readonly #logDir: string;
  readonly #scratchDir: string;
  /** Shutting down: nothing more starts, the queue is handed back. */
  #stopping = false;
  readonly #watermarks;
  #wake: () => void = () => (this.#wokenEarly = true);
  /** Work was announced while no one was waiting (during a claim): do not sleep on it. */
  #wokenEarly = false;
  /** Finishes recorded since the last claim that the other workers are yet to hear of (SQLite). */
  #finishesUntold = false;
  #failure: unknown = null;
  /** How long the latest task code ran (ms), for an "auto" prefetch. */
  readonly #recentRunMs: number[] = [];
  /** Results the loop records with its next claim, in one store call (`finishAndClaim`). */
  readonly #results: Result[] = [];
  /** The loop is running and records results; before and after it, each is recorded on its own. */
  #loopRecords = false;
  #state: WorkerStatus["state"] = { kind: "idle" };
  #finished = 0;

  constructor(options: WorkerOptions) {
    this.#o = { leaseMs: DEFAULTS.workerLeaseMs, pollMs: 500, graceMs: DEFAULTS.workerGraceMs, ...options, prefetch: options.prefetch ?? 0, events: options.events ?? new EngineEvents() };
    this.#watermarks = storeWatermarks(options.store, options.clock);
    this.#pipelines = new Map(options.pipelines.map((p) => [p.id, p]));
    this.#runner = options.runner ?? inlineRunner;
    this.#logDir = join(options.stateDir, "logs");
    this.#scratchDir = join(options.stateDir, "tmp");
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
  /** What this worker is doing now (`Engine.processStatus()`). */
  status(): WorkerStatus {
    return {
      part: "worker", workerId: this.#o.workerId, state: this.#state, concurrency: this.#o.concurrency,
      running: this.#running, queued: this.#queued.length + this.#waiting, finished: this.#finished,
    };
  }

  async run(signal: AbortSignal, done?: () => Promise<boolean>): Promise<void> {
    const { store, clock } = this.#o;
    this.#state = { kind: "running", since: clock.now() };
    const stopWatching = await subscribeToWork(store, this.#o.stateDir, () => this.#wake(), this.#o.workerId);
    const onAbort = () => {
      this.#state = { kind: "stopping", since: clock.now() };
      this.#stopping = true; // a slot freed from now on starts nothing from the queue
      this.#wake();
    };
    signal.addEventListener("abort", onAbort);
    const heartbeat = setInterval(() => void this.#heartbeat(), Math.max(250, this.#o.leaseMs / 3));
    heartbeat.unref();
    await this.#heartbeat();
    await this.#cancelExternalJobs();
    let idlePollMs = 1;
    this.#loopRecords = true;
    try {
      while (!signal.aborted) {
        if (this.#failure) throw this.#failure;
        // Let results that already arrived come in first, so one call records them all and one
        // claim fills the slots they freed: task hosts answer one message at a time.
        if (this.#inFlight.size > 0 && this.#running < this.#o.concurrency) await new Promise((r) => setImmediate(r));
        const wanted = this.#wanted();
        const results = this.#results.splice(0);
        let untold = this.#finishesUntold;
        this.#finishesUntold = false;
        let claimed: ClaimedAttempt[] | undefined = [];
        if (wanted > 0 || results.length > 0) {
          const request: ClaimRequest | null = wanted === 0 ? null : {
            workerId: this.#o.workerId,
            pid: process.pid,
            limit: wanted,
            now: clock.now(),
            leaseMs: this.#o.leaseMs,
            runId: this.#o.runId,
            backfillId: this.#o.backfillId,
            limits: this.#o.limits,
            pipelineIds: this.#loadedIds(),
            logDir: this.#logDir,
          };
          const recorded = await this.#recordAndClaim(results, request, signal);
          claimed = recorded.claimed;
          untold ||= recorded.untold;
          for (const claim of claimed ?? []) {
            this.#leases.set(claim.attemptId, { stop: null, until: claim.leaseExpiresAt, waiting: false, claimedAt: request!.now });
            this.#queued.push(claim);
            const claimedAt = request!.now;
            this.#o.events.emit("attempt:claimed", {
              ...locator(claim), workerId: this.#o.workerId, claimedAt, queueWaitMs: claim.readySince === null ? null : Math.max(0, claimedAt - claim.readySince),
            });
          }
          this.#startQueued(false);
        }
        // After the claim, so that what it took is started first and no one else is woken for it.
        if (untold && othersMayFindWork({ wanted, claimed: claimed?.length ?? null, scoped: !!(this.#o.runId || this.#o.backfillId) })) {
          notifyWork(this.#o.stateDir);
        }
        if (claimed && claimed.length > 0) {
          idlePollMs = 1;
          // Took all it asked for: more may be there. Fewer: it took everything claimable, so it
          // waits to be woken (a finish, another process's announcement) rather than claim again
          // at once for nothing.
          if (claimed.length === wanted) {
            await this.#untilWoken(0);
            continue;
          }
        }
        // The attempts whose results it recorded end in the callbacks queued meanwhile: let them,
        // so that "nothing in flight" below is true once it is (they wake no one: the loop recorded them).
        if (results.length > 0) await new Promise((r) => setImmediate(r));
        if (this.#inFlight.size === 0 && this.#queued.length === 0 && done && (await done())) return;
        await this.#idle(idlePollMs, signal);
        idlePollMs = Math.min(this.#o.pollMs, idlePollMs * 2);
      }
      this.#stopRecordingInLoop();
      await this.#handBackQueued();
      await this.#drain();
    } finally {
      this.#stopRecordingInLoop();
      clearInterval(heartbeat);
      signal.removeEventListener("abort", onAbort);
      stopWatching();
      await this.#handBackQueued();
      await Promise.allSettled(this.#inFlight.values());
      // Finished while stopping, with no claim after: the others take over what they made eligible.
      if (this.#finishesUntold) notifyWork(this.#o.stateDir);
      await store.removeWorker(this.#o.workerId).catch(() => {});
      this.#state = { kind: "stopped" };
    }
    if (this.#failure) throw this.#failure;
  }

  /**
   * Records the results that arrived and claims for the free slots in one store call, one
   * transaction (no results: a claim alone). `untold`: a finish recorded that the other workers
   * are still to hear of (SQLite). If the call fails, the results are recorded one by one, where
   * a finish that fails does so alone, and the claim waits for the next turn of the loop.
   */
  async #recordAndClaim(results: Result[], request: ClaimRequest | null, signal: AbortSignal): Promise<{ claimed: ClaimedAttempt[] | undefined; untold: boolean }> {
    const { store } = this.#o;
    const started = performance.now();
    const told = (claimed: ClaimedAttempt[] | undefined) => {
      if (request && claimed) {
        this.#o.events.emit("worker:claimed", {
          workerId: this.#o.workerId, wanted: request.limit, claimed: claimed.length, finishes: results.length, durationMs: Math.round((performance.now() - started) * 1000) / 1000,
        });
      }
      return claimed;
    };
    if (results.length === 0) return { claimed: told(await this.#retrying("claim", () => store.claimReady(request!), signal)), untold: false };
    let together;
    try {
      together = await store.finishAndClaim({ finishes: results.map((r) => r.finish), claim: request });
      told(together.claimed);
    } catch (error) {
      this.#o.events.emit("worker:store-failed", { workerId: this.#o.workerId, error: (error as Error).message, trouble: { kind: "finish-and-claim", results: results.length } });
      this.#recordEachAlone(results);
      return { claimed: undefined, untold: false };
    }
    let untold = false;
    results.forEach((result, i) => {
      const outcome = together.outcomes[i]!;
      if (this.#announce(result.finish, outcome)) untold = true;
      result.recorded({ outcome, byLoop: true });
    });
    return { claimed: together.claimed, untold };
  }

  /** An attempt's result: to the loop, which records it with its next claim, or on its own when the loop is not running. */
  #record(claim: ClaimedAttempt, finish: AttemptFinish): Promise<Recorded> {
    if (!this.#loopRecords) return this.#recordAlone(claim, finish).then((outcome) => ({ outcome, byLoop: false }));
    return new Promise((recorded) => {
      this.#results.push({ claim, finish, recorded });
      this.#wake();
    });
  }

  async #recordAlone(claim: ClaimedAttempt, finish: AttemptFinish): Promise<FinishOutcome | undefined> {
    const outcome = await this.#retrying(`record ${claim.runId} ${claim.taskId}`, () => this.#o.store.finishAttempt(finish));
    if (outcome && this.#announce(finish, outcome)) this.#finishesUntold = true;
    return outcome;
  }

  /** Tells the scheduler what a finish changed; true when the other workers are still to hear of it. */
  #announce(finish: AttemptFinish, outcome: FinishOutcome): boolean {
    return outcome.accepted && announceFinish(this.#o.store, this.#o.stateDir, outcome, outcome.taskState === "success" && (finish.datasets?.length ?? 0) > 0);
  }

  /** The loop is over: results still waiting for it, and those to come, are recorded one by one. */
  #stopRecordingInLoop(): void {
    this.#loopRecords = false;
    this.#recordEachAlone(this.#results.splice(0));
  }

  #recordEachAlone(results: readonly Result[]): void {
    for (const r of results) void this.#recordAlone(r.claim, r.finish).then((outcome) => r.recorded({ outcome, byLoop: false }));
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
    const ahead = this.#queued.length + this.#waiting;
    if (ahead > prefetch / 2) return 0;
    return Math.max(0, concurrency + prefetch - this.#running - ahead);
  }

  /**
   * Starts queued attempts while slots are free: live work first (core's `nextToStart`).
   * `waited`: the attempts sat in the queue past their claim, so their start is recorded as now.
   */
  #startQueued(waited: boolean): void {
    while (!this.#stopping && this.#running < this.#o.concurrency && this.#queued.length > 0) {
      const [claim] = this.#queued.splice(nextToStart(this.#queued), 1);
      this.#start(claim!, waited ? "waited" : "claimed");
    }
    // Every slot is taken and more are claimed: let the runner hold some, so that a task host
    // gets its next attempts in one message and starts each as soon as the one before it ends.
    const room = this.#runner.waitingRoom ?? 0;
    while (!this.#stopping && this.#waiting < room && this.#queued.length > 0) {
      const at = nextToStart(this.#queued);
      const claim = this.#queued[at]!;
      const pipeline = this.#pipeline(claim.pipelineId);
      if (!pipeline || !this.#runner.holds?.(claim.pipelineId) || !waitsInRunner(pipeline, claim.taskId)) return;
      this.#queued.splice(at, 1);
      this.#start(claim, "ahead");
    }
  }

  /**
   * On shutdown, claimed-ahead attempts that never started go back at once, rescheduled on the
   * same try: claimable again by anyone, as if never claimed.
   */
  async #handBackQueued(): Promise<void> {
    this.#stopping = true;
    const queued = this.#queued.splice(0);
    // Those given to the runner and not started yet come back from it the same way.
    const reason = stopError(ErrorClass.Cancelled, "handed back before it started: the worker is shutting down");
    for (const lease of this.#leases.values()) if (lease.waiting) lease.stop?.abort(reason);
    if (queued.length === 0) return;
    this.#o.events.emit("worker:handed-back", { workerId: this.#o.workerId, count: queued.length, notStarted: true });
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

  /**
   * `how`: "claimed", started right after its claim; "waited", it sat in the queue, so its start
   * is recorded as now; "ahead", given to the runner before a slot freed, its start recorded
   * when its task code starts, and its slot taken from then.
   */
  #start(claim: ClaimedAttempt, how: "claimed" | "waited" | "ahead"): void {
    const stop = new AbortController();
    let lease = this.#leases.get(claim.attemptId);
    if (lease) lease.stop = stop;
    else this.#leases.set(claim.attemptId, (lease = { stop, until: claim.leaseExpiresAt, waiting: false, claimedAt: this.#o.clock.now() }));
    let startedAt = how === "waited" ? this.#o.clock.now() : undefined;
    let running = how !== "ahead";
    let began = this.#o.clock.now();
    let ranMs = 0;
    const started = () => this.#o.events.emit("attempt:started", { ...locator(claim), workerId: this.#o.workerId });
    if (running) {
      this.#running++;
      started();
    } else {
      this.#waiting++;
      lease.waiting = true;
    }
    const onStarted = () => {
      if (!lease.waiting) return;
      lease.waiting = false;
      this.#waiting--;
      this.#running++;
      running = true;
      startedAt = began = this.#o.clock.now();
      started();
    };
    // The slot frees when the task code returns, not once its result is recorded: the next
    // queued attempt starts at once, while the result is still being written.
    const freeSlot = () => {
      if (lease.waiting) {
        // Given back by the runner without starting (stopped, or handed back on shutdown).
        lease.waiting = false;
        this.#waiting--;
        return this.#startQueued(true);
      }
      if (!running) return;
      running = false;
      this.#running--;
      ranMs = this.#o.clock.now() - began;
      this.#recentRunMs.push(ranMs);
      if (this.#recentRunMs.length > AUTO_PREFETCH_WINDOW) this.#recentRunMs.shift();
      this.#startQueued(true);
    };
    // The loop claims for the freed slot: woken, unless it recorded the result (and claimed) itself.
    let wakeLoop = true;
    const work = (async () => {
      const loaded = this.#pipeline(claim.pipelineId);
      const pipeline = loaded && (await pinnedCode.pipelineFor(claim, loaded));
      let finish: AttemptFinish;
      if (!pipeline) {
        // Claimed before a reload dropped it: not ours to judge; someone who has it runs it.
        finish = this.#handBack(claim, `pipeline ${claim.pipelineId} is not loaded by worker ${this.#o.workerId}`);
      } else if (typeof pipeline === "string") {
        // Told with the attempt's result (`attempt:finished`, a DefinitionError naming why).
        finish = codeMissingFinish(claim, pipeline, { ...this.#o, logMaxBytes: this.#o.logMaxBytes });
      } else {
        finish = await executeAttempt(pipeline, claim, {
          clock: this.#o.clock,
          workerId: this.#o.workerId,
          scratchDir: this.#scratchDir,
          defaultCwd: this.#o.projectDir ?? process.cwd(),
          cancel: stop.signal,
          random: this.#o.random,
          frozen: this.#o.frozen,
          watermarks: this.#watermarks,
          connections: this.#o.connections,
          upstreamSummaries: (runId, taskIds) => upstreamSummaries(this.#o.store, runId, taskIds),
          mappedPages: (runId, taskId, after, limit) => mappedPage(this.#o.store, runId, taskId, after, limit),
          externalJobs: this.#o.store,
          runner: this.#runner,
          logMaxBytes: this.#o.logMaxBytes,
          masker: this.#o.masker,
          withheldEnv: this.#o.withheldEnv,
          onStarted,
        });
      }
      const neverStarted = lease.waiting;
      freeSlot();
      if (neverStarted && finish.errorClass === ErrorClass.LeaseLost) {
        // As a queued attempt whose lease went: nothing ran, nothing to record.
        this.#o.events.emit("attempt:not-started", { ...locator(claim), workerId: this.#o.workerId, reason: finish.errorMessage ?? "its lease was lost" });
        return;
      }
      if (startedAt !== undefined) finish = { ...finish, startedAt };
      if (finish.errorClass === ErrorClass.Cancelled) {
        // Handed back on shutdown: the same try runs again elsewhere, at once.
        finish = { ...finish, outcome: "rescheduled", retryAt: this.#o.clock.now() };
      } else if (finish.errorClass === ErrorClass.DefinitionChanged) {
        // The file changed between our load and the task host's: load it again, and let the
        // attempt run on the definition as it is now, without using up a try.
        this.#o.events.emit("attempt:handed-back", { ...locator(claim), workerId: this.#o.workerId, reason: finish.errorMessage ?? "its definition changed", reloading: true });
        void this.#o.catalog?.refresh();
        finish = { ...finish, outcome: "rescheduled", retryAt: this.#o.clock.now() + HAND_BACK_DELAY_MS };
      }
      // The other workers hear of it after this worker's next claim, if at all (`othersMayFindWork`).
      const { outcome, byLoop } = await this.#record(claim, finish);
      wakeLoop = !byLoop;
      if (!outcome) return; // the lease will run out and the attempt will be retried elsewhere
      if (!outcome.accepted) this.#o.events.emit("attempt:result-refused", { ...locator(claim), workerId: this.#o.workerId });
      this.#finished++;
      this.#o.events.emit("attempt:finished", {
        ...locator(claim),
        workerId: this.#o.workerId,
        taskState: outcome.taskState,
        runState: outcome.runState,
        errorMessage: finish.errorMessage,
        errorClass: finish.errorClass,
        outcome: finish.outcome,
        startedAt: finish.startedAt ?? lease.claimedAt,
        endedAt: finish.now,
        durationMs: ranMs,
      });
      if (outcome.runState === "success" || outcome.runState === "failed") {
        this.#o.events.emit("run:ended", { pipelineId: claim.pipelineId, runId: claim.runId, state: outcome.runState, by: "attempt" });
      }
    })()
      .catch((error) => {
        this.#failure ??= error;
        wakeLoop = true;
      })
      .finally(() => {
        freeSlot();
        this.#inFlight.delete(claim.attemptId);
        this.#leases.delete(claim.attemptId);
        if (wakeLoop) this.#wake();
      });
    this.#inFlight.set(claim.attemptId, work);
  }

  /** An attempt given back untouched: rescheduled, the same try, claimable again shortly. */
  #handBack(claim: ClaimedAttempt, why: string): AttemptFinish {
    this.#o.events.emit("attempt:handed-back", { ...locator(claim), workerId: this.#o.workerId, reason: why, reloading: false });
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
    this.#o.events.emit("worker:stopping", { workerId: this.#o.workerId, graceMs: this.#o.graceMs, running: this.#inFlight.size });
    const settled = Promise.allSettled(this.#inFlight.values()).then(() => true);
    if (!(await Promise.race([settled, realSleep(this.#o.graceMs).then(() => false)]))) {
      this.#o.events.emit("worker:handed-back", { workerId: this.#o.workerId, count: this.#inFlight.size, notStarted: false });
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
      this.#o.events.emit("worker:store-failed", { workerId: this.#o.workerId, error: (error as Error).message, trouble: { kind: "gave-up", what } });
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
      this.#o.events.emit("worker:store-failed", { workerId, error: (error as Error).message, trouble: { kind: "heartbeat" } });
    }
    void this.#cancelExternalJobs();
    const held = [...this.#leases.keys()];
    if (held.length === 0) return;
    // One statement for every lease held, running or queued.
    let renewed: Set<number> | null = null;
    try {
      renewed = new Set(await store.renewLeases(workerId, held, now + leaseMs));
    } catch (error) {
      this.#o.events.emit("worker:store-failed", { workerId, error: (error as Error).message, trouble: { kind: "lease-renewal", attempts: held.length } });
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

  #cancelling: Promise<number> | null = null;

  /** Remote jobs no task instance waits on any more are cancelled by any worker that has their pipeline (external-cancels.ts). */
  #cancelExternalJobs(): Promise<number> {
    this.#cancelling ??= cancelRequestedJobs({
      store: this.#o.store,
      clock: this.#o.clock,
      pipeline: (id) => this.#pipeline(id),
      pipelineIds: this.#loadedIds() ?? [...this.#pipelines.keys()],
      runner: this.#runner,
      logDir: this.#logDir,
      projectDir: this.#o.projectDir ?? process.cwd(),
      watermarks: this.#watermarks,
      masker: this.#o.masker,
      events: this.#o.events,
    })
      .catch((error) => {
        this.#o.events.emit("worker:store-failed", { workerId: this.#o.workerId, error: (error as Error).message, trouble: { kind: "external-cancels" } });
        return 0;
      })
      .finally(() => (this.#cancelling = null));
    return this.#cancelling;
  }

  /** A lease not ours any more (or about to run out): a running attempt is killed, a queued one never starts. */
  #loseLease(attemptId: number, lease: Lease, why: string): void {
    if (lease.stop) return lease.stop.abort(stopError(ErrorClass.LeaseLost, why));
    const at = this.#queued.findIndex((c) => c.attemptId === attemptId);
    if (at === -1) return;
    const [claim] = this.#queued.splice(at, 1);
    this.#leases.delete(attemptId);
    this.#o.events.emit("attempt:not-started", { ...locator(claim!), workerId: this.#o.workerId, reason: why.replace("; stopped", "; dropped from the queue") });
  }
}

function locator(claim: ClaimedAttempt): AttemptLocator {
  return { pipelineId: claim.pipelineId, runId: claim.runId, taskId: claim.taskId, mapKey: claim.mapKey, tryNumber: claim.tryNumber, businessDate: claim.businessDate };
}
