/**
 * What a worker's claim says about the work its finishes made claimable. The worker that
 * recorded a finish claims right after it, for the slot the finish freed: whatever the finish
 * made eligible (the next task of a chain, a pool slot freed) it takes itself when it can, with
 * no other process woken. Waking the other workers for that costs each an empty claim (a write
 * transaction) whose lock the finishing worker then waits for (SQLite sleeps 1 ms and more on a
 * busy lock), and on two cores it takes the CPU from the hop itself: that was a chain hop's
 * largest cost. So the others are woken only when the claim could not have taken everything:
 * - it asked for nothing (no free slot, queue full, shutting down), or
 * - it took all it asked for (more may be there), or it failed, or
 * - it was scoped to one run or backfill (a run executed in process, a backfill run by its own process), where the others may work
 *   on what it does not.
 * A claim that took fewer than it asked for, unscoped, saw everything claimable for its loaded
 * pipelines and took it. What it leaves is work no one can start now, or (the one case this
 * misses) work of a pipeline this worker has not loaded and another has: that worker finds it at
 * its next poll (`pollMs`) instead of at once.
 *
 * Asked by the worker after a claim of its own (SQLite: whether to touch the wake-up file), and
 * by a store whose finish and claim share a transaction (PostgreSQL's `finishAndClaim`: whether
 * the finishes' NOTIFY goes out at all).
 */
export function othersMayFindWork(claim: { wanted: number; claimed: number | null; scoped: boolean }): boolean {
  return claim.scoped || claim.claimed === null || claim.wanted === 0 || claim.claimed >= claim.wanted;
}
