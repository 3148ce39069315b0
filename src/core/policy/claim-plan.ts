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
    if (c.pool !== null) {
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
