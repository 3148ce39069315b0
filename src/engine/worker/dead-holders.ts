import { hostname } from "node:os";
import type { Store } from "../../store/port.ts";

/** True when no process with this pid exists on this host (EPERM: it exists, as another user). */
export function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/**
 * Attempts of this run whose holder was a process on this host that no longer exists (an
 * `idem run` killed with -9): nobody will renew their leases, so waiting for them to run out
 * only delays the rerun. They are recorded as lost now. Their processes died with their holder
 * (see supervised-spawn), so nothing of them runs on.
 */
export async function recoverDeadHolders(
  store: Store,
  now: number,
  options: { runId: string },
): Promise<number> {
  const host = hostname();
  const hosts = new Map((await store.listWorkers()).map((w) => [w.workerId, w.host]));
  let lost = 0;
  for (const attempt of await store.listAttempts(options.runId)) {
    if (attempt.state !== "running" || attempt.pid === null || attempt.pid === process.pid) continue;
    const holderHost = hosts.get(attempt.workerId) ?? attempt.workerId.split(":")[0];
    if (holderHost !== host || !processGone(attempt.pid)) continue;
    // End the lease now (fenced on the dead holder's id), then record the loss as the scheduler would.
    if (!(await store.renewLease(attempt.attemptId, attempt.workerId, now - 1))) continue;
    // Its try is used up; the rerun that follows starts the next one at once.
    const outcome = await store.loseAttempt({ attemptId: attempt.attemptId, now, retryAt: now });
    if (outcome.accepted) lost++;
  }
  return lost;
}
