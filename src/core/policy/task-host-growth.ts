/**
 * How many task hosts a worker's pool starts now: as many as the work needs, up to one per slot.
 * More hosts help attempts that wait while the hosts alive are held by task code (a task that
 * waits on I/O or a timer, or computes): each such attempt gets a host. They do not help
 * attempts that wait because the machine is busy: instant tasks run back to back on the hosts
 * alive, and a host more would only cost its boot (a quarter of a second of CPU) and its memory,
 * taken from the worker on the same cores. So the pool starts a host for an attempt that has
 * waited GROW_AFTER_MS for one only while the hosts' task code is not instant (the median of the
 * latest TASK_HOST_WINDOW runs at least TASK_CODE_BUSY_MS, or a running one has already run
 * GROW_AFTER_MS); an attempt taken back from behind a slow one gets a host at once.
 */

/** An attempt waits this long for a host (once one is up) before the pool may start another. */
export const GROW_AFTER_MS = 50;
/** Task code at least this long (median) keeps its host from the attempts behind it: another host helps. */
export const TASK_CODE_BUSY_MS = 1;
/** How many of the latest task code durations the median is taken over. */
export const TASK_HOST_WINDOW = 16;

export interface TaskHostDemand {
  /** Hosts the pool may have at most (the worker's concurrency). */
  size: number;
  /** Hosts alive (of any version of the pipelines, booting or up). */
  alive: number;
  /** Hosts alive for the pipelines' current version. */
  current: number;
  /** Hosts starting now (not up yet). */
  booting: number;
  /** Attempts waiting in the pool for a host. */
  waiting: number;
  /** Of them: taken back from behind a slow attempt. */
  urgent: number;
  /** Of the others: waited GROW_AFTER_MS since given (or since the last host came up). */
  waitedLong: number;
  /** Task code durations (ms) of the latest attempts, oldest first. */
  recentCodeMs: readonly number[];
  /** How long the longest-running attempt now running has run (ms); 0 when none runs. */
  longestRunningMs: number;
}

export function taskHostsToStart(d: TaskHostDemand): number {
  const room = Math.max(0, d.size - d.alive);
  if (d.waiting === 0 || room === 0) return 0;
  // None for the current pipelines: the first starts at once, whatever the others do.
  const first = d.current === 0 ? 1 : 0;
  const held = d.longestRunningMs >= GROW_AFTER_MS || median(d.recentCodeMs.slice(-TASK_HOST_WINDOW)) >= TASK_CODE_BUSY_MS;
  const wanted = d.urgent + (held ? d.waitedLong : 0) - d.booting;
  return Math.min(room, Math.max(first, wanted));
}

function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}
