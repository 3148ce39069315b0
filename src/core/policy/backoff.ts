import type { Clock } from "../model/clock.ts";

/**
 * How a loop that retries something out of its hands (a state store out of reach) paces itself.
 * The first pause is `firstMs`; each next one doubles, at least `minMs`, at most `maxMs`. It gives
 * up once the next pause would end more than `withinMs` after the backoff began (Infinity: never),
 * or as soon as `signal` aborts.
 */
export interface BackoffOptions {
  firstMs: number;
  /** Default: firstMs. */
  minMs?: number;
  maxMs: number;
  withinMs: number;
  /** Whose time the pauses and the deadline are measured in, and how to sleep on it. */
  clock: Clock;
  signal?: AbortSignal;
}

export class Backoff {
  readonly #o: BackoffOptions;
  readonly #deadline: number;
  #nextMs: number;

  constructor(options: BackoffOptions) {
    this.#o = options;
    this.#deadline = options.clock.now() + options.withinMs;
    this.#nextMs = options.firstMs;
  }

  /** The pause the next call of `again` would wait. */
  get nextPauseMs(): number {
    return this.#nextMs;
  }

  /** Waits before the next try: true to try again, false when the time is up or the signal aborted. */
  async again(): Promise<boolean> {
    const { clock, signal } = this.#o;
    const pause = this.#nextMs;
    if (signal?.aborted || clock.now() + pause > this.#deadline) return false;
    this.#nextMs = Math.min(Math.max(pause * 2, this.#o.minMs ?? this.#o.firstMs), this.#o.maxMs);
    if (pause > 0) await clock.sleep(pause, signal);
    return !signal?.aborted;
  }
}

/**
 * Runs `operation` until it succeeds, pausing by `backoff` between tries while `retryable` says
 * the error is worth another try (default: every error). On giving up it throws the last error.
 */
export async function retryWithBackoff<T>(
  operation: () => Promise<T>,
  options: BackoffOptions & { retryable?: (error: unknown) => boolean },
): Promise<T> {
  const backoff = new Backoff(options);
  for (;;) {
    try {
      return await operation();
    } catch (error) {
      if (options.retryable && !options.retryable(error)) throw error;
      if (!(await backoff.again())) throw error;
    }
  }
}
