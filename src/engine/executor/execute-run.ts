import { join } from "node:path";
import type { Clock } from "../../core/model/clock.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import type { ClaimedAttempt, RunRecord, Store } from "../../store/port.ts";
import { attemptLogPath } from "./log-paths.ts";
import { executeAttempt } from "./execute-attempt.ts";

export interface ExecuteRunOptions {
  store: Store;
  pipeline: Pipeline;
  runId: string;
  clock: Clock;
  stateDir: string;
  workerId: string;
  /** Task instances of this run that may run at once. */
  concurrency: number;
  leaseMs?: number;
  defaultCwd?: string;
  cancel?: AbortSignal;
  random?: () => number;
  /** Called after each attempt is recorded; for progress output. */
  onAttempt?: (claim: ClaimedAttempt, outcome: { taskState: string | null; errorMessage: string | null }) => void;
}

const DEFAULT_LEASE_MS = 60_000;
/** How often to look again when another process holds some of this run's tasks. */
const FOREIGN_WORK_POLL_MS = 250;

/**
 * Runs one run in this process until it finishes: claims eligible task instances (the store makes
 * children eligible in the transaction that records their parent), runs them concurrently up to
 * the limit, and sleeps on the clock until the next retry is due.
 */
export async function executeRun(options: ExecuteRunOptions): Promise<RunRecord> {
  const { store, pipeline, runId, clock } = options;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const inFlight = new Map<number, Promise<void>>();
  let wake: () => void = () => {};
  let failure: unknown = null;

  const heartbeat = setInterval(() => {
    for (const attemptId of inFlight.keys()) {
      void store.renewLease(attemptId, options.workerId, clock.now() + leaseMs).catch(() => {});
    }
  }, Math.max(1_000, leaseMs / 3));
  heartbeat.unref();

  const start = (claim: ClaimedAttempt) => {
    const work = executeAttempt(pipeline, claim, {
      clock,
      workerId: options.workerId,
      scratchDir: join(options.stateDir, "tmp"),
      defaultCwd: options.defaultCwd ?? process.cwd(),
      cancel: options.cancel,
      random: options.random,
    })
      .then(async (finish) => {
        const outcome = await store.finishAttempt(finish);
        options.onAttempt?.(claim, { taskState: outcome.taskState, errorMessage: finish.errorMessage });
      })
      .catch((error) => {
        failure ??= error;
      })
      .finally(() => {
        inFlight.delete(claim.attemptId);
        wake();
      });
    inFlight.set(claim.attemptId, work);
  };

  try {
    for (;;) {
      if (failure) throw failure;
      const free = options.concurrency - inFlight.size;
      let claimed = 0;
      if (free > 0 && !options.cancel?.aborted) {
        const claims = await store.claimReady({
          workerId: options.workerId,
          pid: process.pid,
          limit: free,
          now: clock.now(),
          leaseMs,
          runId,
          logPath: (r, t, n) => attemptLogPath(options.stateDir, pipeline.id, r, t, n),
        });
        claims.forEach(start);
        claimed = claims.length;
      }
      if (inFlight.size > 0) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      if (claimed > 0) continue;
      const run = await store.getRun(runId);
      if (!run) throw new Error(`run ${runId} disappeared from the store`);
      if (run.state === "success" || run.state === "failed" || options.cancel?.aborted) return run;
      const retryAt = await store.nextRetryAt(runId);
      const waitMs = retryAt === null ? FOREIGN_WORK_POLL_MS : Math.max(0, retryAt - clock.now());
      await clock.sleep(waitMs, options.cancel);
    }
  } finally {
    clearInterval(heartbeat);
    await Promise.allSettled(inFlight.values());
  }
}
