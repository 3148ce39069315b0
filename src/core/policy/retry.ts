export interface RetryPolicy {
  /** How many times a failed attempt is tried again (0 = never). */
  retries: number;
  retryDelayMs: number;
  backoff: "fixed" | "exponential";
  /** Upper bound on any single delay. */
  maxRetryDelayMs: number;
  /** Fraction (0..1) of the delay that may be randomly removed, so retries of many tasks spread out. */
  jitter: number;
}

/**
 * Delay before try `nextTry` (2 for the first retry). Exponential backoff doubles per retry:
 * delay x 2^(retry-1), capped. `random` is injected so tests are deterministic.
 */
export function retryDelay(policy: RetryPolicy, nextTry: number, random: () => number = Math.random): number {
  const retryIndex = Math.max(1, nextTry - 1);
  const base =
    policy.backoff === "exponential" ? policy.retryDelayMs * 2 ** Math.min(retryIndex - 1, 52) : policy.retryDelayMs;
  const capped = Math.min(base, policy.maxRetryDelayMs);
  const jitter = Math.min(Math.max(policy.jitter, 0), 1);
  return Math.round(capped * (1 - jitter * random()));
}
