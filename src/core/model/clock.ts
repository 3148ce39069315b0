/**
 * The only way the engine learns the time. Production uses the system clock; tests pass a
 * fake one and run months of schedule in milliseconds.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms` of this clock's time, or early (without error) when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted || ms <= 0) return resolve();
      const timer = setTimeout(done, ms);
      signal?.addEventListener("abort", done, { once: true });
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      }
    }),
};

/**
 * A clock that reads `startAt` at first and runs on from it at `base`'s pace: a test aid for a
 * process that keeps running (a scheduler shown catch-up from a given instant).
 */
export function offsetClock(startAt: number, base: Clock = systemClock): Clock {
  const offset = startAt - base.now();
  return { now: () => base.now() + offset, sleep: base.sleep };
}

/** A clock that always reads `at` (its sleeps take `base`'s time): a test aid for a command that reads once. */
export function fixedClock(at: number, base: Clock = systemClock): Clock {
  return { now: () => at, sleep: base.sleep };
}
