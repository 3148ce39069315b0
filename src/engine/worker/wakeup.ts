import { closeSync, mkdirSync, openSync, utimesSync, watch, type FSWatcher } from "node:fs";
import { join } from "node:path";
import type { FinishOutcome, Store } from "../../store/port.ts";

/**
 * Processes sharing one SQLite state file tell each other "there is new work" by touching a file
 * that the others watch (inotify), so work another process made claimable starts within
 * milliseconds without anyone polling fast. Polling remains as the fallback. A worker's own
 * finishes are the exception: it claims after each itself, and tells the others only when that
 * claim may have left something for them (`othersMayFindWork`).
 *
 * Two channels, because two kinds of process wait for different things: workers for work (a task
 * made eligible, a slot freed), the scheduler for what it acts on (a run ended, so the run cap has
 * room and a restatement or a backfill may go on; a dataset published; a manual action). A
 * scheduler woken by every finish ticks hundreds of times a second under load for nothing.
 */
export function wakeupFile(stateDir: string): string {
  return join(stateDir, "wakeup");
}

export function schedulerWakeupFile(stateDir: string): string {
  return join(stateDir, "wakeup-scheduler");
}

function touch(file: string, stateDir: string): void {
  const now = new Date();
  try {
    utimesSync(file, now, now);
  } catch {
    mkdirSync(stateDir, { recursive: true });
    closeSync(openSync(file, "a"));
  }
}

function watchFile(file: string, stateDir: string, onChange: () => void): () => void {
  mkdirSync(stateDir, { recursive: true });
  closeSync(openSync(file, "a"));
  let watcher: FSWatcher | null = null;
  try {
    watcher = watch(file, { persistent: false }, () => onChange());
    watcher.on("error", () => watcher?.close());
  } catch {
    // no inotify here: polling alone will do
  }
  return () => watcher?.close();
}

export function notifyWork(stateDir: string): void {
  touch(wakeupFile(stateDir), stateDir);
}

/** Files to touch once this turn of the event loop is over: once for all the finishes it recorded. */
const touchSoon = new Map<string, string>();

function touchAfterThisTurn(file: string, stateDir: string): void {
  if (touchSoon.size === 0) {
    setImmediate(() => {
      const files = [...touchSoon];
      touchSoon.clear();
      for (const [f, dir] of files) {
        try {
          touch(f, dir);
        } catch {
          // a wake-up lost: the others find the work at their next poll
        }
      }
    });
  }
  touchSoon.set(file, stateDir);
}

export function notifyScheduler(stateDir: string): void {
  touch(schedulerWakeupFile(stateDir), stateDir);
}

export function watchWork(stateDir: string, onWork: () => void): () => void {
  return watchFile(wakeupFile(stateDir), stateDir, onWork);
}

/**
 * The store's own channel (PostgreSQL LISTEN/NOTIFY) when it has one, else the watched file.
 * `workerId`: what that worker announces for the others does not wake it.
 */
export async function subscribeToWork(store: Store, stateDir: string, onWork: () => void, workerId?: string): Promise<() => void> {
  const listen = store.watchWork && ((wake: () => void) => store.watchWork!(wake, workerId));
  return subscribe(watchFile(wakeupFile(stateDir), stateDir, onWork), listen, onWork);
}

/** What wakes the scheduler: the store's scheduling channel where it has one, and the file. */
export async function subscribeToScheduling(store: Store, stateDir: string, onWake: () => void): Promise<() => void> {
  return subscribe(watchFile(schedulerWakeupFile(stateDir), stateDir, onWake), store.watchScheduling?.bind(store), onWake);
}

async function subscribe(
  unwatchFile: () => void,
  listen: ((onWake: () => void) => Promise<() => Promise<void>>) | undefined,
  onWake: () => void,
): Promise<() => void> {
  if (!listen) return unwatchFile;
  const unlisten = await listen(onWake);
  return () => {
    unwatchFile();
    void unlisten();
  };
}

/**
 * After a worker recorded a finish: tells the scheduler of this state file what it changed (a
 * run's end or a published dataset; not every finish). A store with channels of its own
 * (PostgreSQL) has announced it already, inside the finishing transaction, to every machine.
 *
 * Returns whether the other workers are still to be told (SQLite: the store has no channel). They
 * are not told here: see `othersMayFindWork`, which the worker asks after its next claim.
 */
export function announceFinish(store: Store, stateDir: string, outcome: FinishOutcome, published: boolean): boolean {
  // Finishes recorded together (one SQLite transaction) end runs together: one touch for all.
  if (!store.watchScheduling && (outcome.runState !== null || published)) touchAfterThisTurn(schedulerWakeupFile(stateDir), stateDir);
  return !store.watchWork;
}

