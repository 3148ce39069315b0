/**
 * Which attempt a worker starts next from those it claimed ahead of free slots (its `prefetch`
 * queue): live work before background work (a backfill's or a restatement's run), and within
 * each, the order the claims took them in (the claim plan's order: due retries, then priority,
 * then age). A claim already orders what it takes; the queue can still mix two claims, and a
 * later claim may bring live work while background work waits in the queue.
 */
export interface QueuedAttempt {
  backfillId: string | null;
  trigger: string;
}

/** Index in `queue` (claim order) of the attempt to start next; -1 when the queue is empty. */
export function nextToStart(queue: readonly QueuedAttempt[]): number {
  if (queue.length === 0) return -1;
  const live = queue.findIndex((a) => !isBackground(a));
  return live === -1 ? 0 : live;
}

export function isBackground(a: QueuedAttempt): boolean {
  return a.backfillId !== null || a.trigger === "restate";
}
