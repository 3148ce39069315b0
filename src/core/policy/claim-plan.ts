import type { TaskState } from "../model/states.ts";
import { LIVE_TASK_STATES } from "./run-progress.ts";
/**
 * Which task instances one claim takes, under the worker's limit, the pipelines it has loaded,
 * parallelism, each pipeline's cap on running tasks, and pool slots. Every store adapter reads
 * the candidates and the counts under its locks, calls `planClaim`, and starts what it returns
 * in the same transaction.
 *
 * Claim order: retries and pokes that are due come first (they have waited already), then queued
 * task instances by priority (highest first), then by how long they have waited; within each,
 * live runs before background work (backfills and restatements). A candidate that does not fit
 * is passed over, not waited for, except that a candidate kept out of its pool for `starvationMs`
 * reserves the pool: nobody after it takes the pool's slots, so a large task is not starved by
 * small ones.
 *
 * A pool's `used` counts running task instances and the remote jobs that hold slots while they
 * run (`remoteJobHoldsSlots`), each task instance once: a running attempt of a task instance whose
 * job holds slots is counted as the job.
 */

export interface ClaimCandidate {
  taskId: string;
  pipelineId: string;
  pool: string | null;
  slots: number;
  priority: number;
  /** When it became claimable: queued, or the time its retry or poke fell due. */
  waitedSince: number | null;
  /** A retry or poke that fell due (claimed before queued work); false for a claim scoped to one run or backfill. */
  due: boolean;
  /** A backfill's or a restatement's: served after live runs. */
  background: boolean;
  /**
   * Its remote job holds its pool slots already (core's `remoteJobHoldsSlots`): they are in the
   * pool's `used`, so it takes none anew and no full or reserved pool keeps it out. Without this a
   * poll could never be claimed into a pool its own job fills, and the job would never be seen to end.
   */
  heldRemotely?: boolean;
}

export interface ClaimPolicy {
  /** Candidates this claim takes at most. */
  limit: number;
  now: number;
  /** Tasks running at once across every pipeline. */
  parallelism?: number;
  /** Running tasks at once per pipeline. */
  maxActiveTasks?: Readonly<Record<string, number>>;
  /** Default 60 s. */
  starvationMs?: number;
  /** Only candidates of these pipelines (the ones the worker has loaded). */
  pipelineIds?: readonly string[];
}

/** What runs now, counted under the claim's locks. A pool missing here does not exist: its candidates wait. */
export interface ClaimCounts {
  running: number;
  runningByPipeline: ReadonlyMap<string, number>;
  pools: ReadonlyMap<string, { slots: number; used: number }>;
}

export interface ClaimPlan<C> {
  chosen: C[];
  /** Some candidate was considered and did not fit (a wider look may find more). */
  passedOver: boolean;
  /** Candidates not even considered (the limit or parallelism was reached first). */
  unconsidered: number;
}

export const DEFAULT_STARVATION_MS = 60_000;

/** The claim order as a comparison (stable sort keeps the store's order among equals). */
export function compareClaimOrder(a: ClaimCandidate, b: ClaimCandidate): number {
  if (a.due !== b.due) return a.due ? -1 : 1;
  if (a.background !== b.background) return a.background ? 1 : -1;
  if (!a.due && a.priority !== b.priority) return b.priority - a.priority;
  const since = (a.waitedSince ?? 0) - (b.waitedSince ?? 0);
  if (since !== 0) return since;
  return a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0;
}

export function planClaim<C extends ClaimCandidate>(candidates: readonly C[], limits: ClaimPolicy, counts: ClaimCounts): ClaimPlan<C> {
  const ordered = [...candidates].sort(compareClaimOrder);
  let running = counts.running;
  const runningByPipeline = new Map(counts.runningByPipeline);
  const pools = new Map<string, { slots: number; used: number; reserved: boolean }>();
  for (const [name, pool] of counts.pools) pools.set(name, { slots: pool.slots, used: pool.used, reserved: false });
  const starvationMs = limits.starvationMs ?? DEFAULT_STARVATION_MS;
  const loaded = limits.pipelineIds ? new Set(limits.pipelineIds) : null;
  const chosen: C[] = [];
  let passedOver = false;
  let considered = 0;
  for (const c of ordered) {
    if (chosen.length >= limits.limit) break;
    if (limits.parallelism !== undefined && running >= limits.parallelism) break;
    considered++;
    if (loaded && !loaded.has(c.pipelineId)) {
      passedOver = true;
      continue;
    }
    const cap = limits.maxActiveTasks?.[c.pipelineId];
    if (cap !== undefined && (runningByPipeline.get(c.pipelineId) ?? 0) >= cap) {
      passedOver = true;
      continue;
    }
    if (c.pool !== null && !c.heldRemotely) {
      const pool = pools.get(c.pool);
      if (!pool || pool.reserved) {
        passedOver = true;
        continue;
      }
      if (pool.used + c.slots > pool.slots) {
        // It does not fit now; once it has waited long enough, nobody else may take the pool's slots.
        if (c.slots <= pool.slots && limits.now - (c.waitedSince ?? limits.now) >= starvationMs) pool.reserved = true;
        passedOver = true;
        continue;
      }
      pool.used += c.slots;
    }
    running++;
    runningByPipeline.set(c.pipelineId, (runningByPipeline.get(c.pipelineId) ?? 0) + 1);
    chosen.push(c);
  }
  return { chosen, passedOver, unconsidered: ordered.length - considered };
}

/** A remote job recorded holding pool slots, with its task instance's state (the store's row). */
export interface RemoteHolder {
  runId: string;
  taskId: string;
  pool: string;
  /** The slots it was recorded holding. */
  slots: number;
  jobState: string;
  taskState: TaskState;
}

/**
 * Whether a remote job counts in its pool: it was recorded holding slots (the task asked with
 * `holdPoolWhileRemote`), it is still open (not ended, not asked to be cancelled), and its task
 * instance is live (waits on it, or will reattach to it). So a job's slots come back when it
 * ends, when a clear, a settle by hand or a stop asks to cancel it, and when its task instance
 * ends for good (even with the job left open because its cancel failed); and a lost attempt's
 * retry, or the worker that takes it over, reattaches to slots the job still holds.
 */
export function remoteJobHoldsSlots(job: Pick<RemoteHolder, "slots" | "jobState" | "taskState">): boolean {
  return job.jobState === "open" && job.slots > 0 && (LIVE_TASK_STATES as readonly string[]).includes(job.taskState);
}

/** How a task instance is named among the holders. */
export const holderKey = (runId: string, taskId: string): string => `${runId}\0${taskId}`;

/**
 * The pools' use with remote jobs counted: `used` as the store counts it (running task
 * instances) plus each holding job whose task instance is not running (a running one is counted
 * already: once, never twice); and the task instances whose jobs hold their slots
 * (`heldRemotely` for their candidates).
 */
export function withRemoteHolds(
  pools: ReadonlyMap<string, { slots: number; used: number }>,
  holders: readonly RemoteHolder[],
): { pools: Map<string, { slots: number; used: number }>; heldRemotely: Set<string> } {
  const counted = new Map([...pools].map(([name, p]) => [name, { slots: p.slots, used: p.used }]));
  const heldRemotely = new Set<string>();
  for (const h of holders) {
    if (!remoteJobHoldsSlots(h)) continue;
    heldRemotely.add(holderKey(h.runId, h.taskId));
    const pool = counted.get(h.pool);
    if (pool && h.taskState !== "running") pool.used += h.slots;
  }
  return { pools: counted, heldRemotely };
}
