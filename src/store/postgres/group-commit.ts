import type { AttemptFinish, FinishOutcome } from "../port.ts";
import { isConnectionError } from "./connection.ts";

/** At most this many finishes share one transaction. */
const MAX_FINISH_BATCH = 64;
/** Batches of finishes in flight at once from one process: one, so that the others grow while it runs. */
const FINISH_LANES = 1;

interface QueuedFinish {
  finish: AttemptFinish;
  resolve: (outcome: FinishOutcome) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: finishes that arrive while others are being recorded wait and go together,
 * in one transaction of a few round trips, so the cost per attempt falls as load rises.
 * The outcome of each is what it would be had they been recorded one after the other, in
 * arrival order.
 */
export class GroupCommit {
  readonly #record: (finishes: AttemptFinish[]) => Promise<FinishOutcome[]>;
  readonly #queue: QueuedFinish[] = [];
  #lanes = 0;

  /** `record` writes a batch in one transaction and returns the outcomes in its order. */
  constructor(record: (finishes: AttemptFinish[]) => Promise<FinishOutcome[]>) {
    this.#record = record;
  }

  finish(f: AttemptFinish): Promise<FinishOutcome> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ finish: f, resolve, reject });
      this.#drain();
    });
  }

  #drain(): void {
    while (this.#lanes < FINISH_LANES && this.#queue.length > 0) {
      const batch: QueuedFinish[] = [];
      const seen = new Set<number>();
      for (let i = 0; i < this.#queue.length && batch.length < MAX_FINISH_BATCH; ) {
        const queued = this.#queue[i]!;
        if (seen.has(queued.finish.attemptId)) {
          i++; // the same attempt twice: the second waits for the next batch
          continue;
        }
        seen.add(queued.finish.attemptId);
        batch.push(queued);
        this.#queue.splice(i, 1);
      }
      this.#lanes++;
      void this.#commit(batch).finally(() => {
        this.#lanes--;
        this.#drain();
      });
    }
  }

  async #commit(batch: QueuedFinish[]): Promise<void> {
    try {
      const outcomes = await this.#record(batch.map((q) => q.finish));
      batch.forEach((q, i) => q.resolve(outcomes[i]!));
    } catch (error) {
      if (batch.length > 1 && !isConnectionError(error)) {
        // Something in one of them (bad text in a summary?) must not fail the others.
        for (const q of batch) await this.#record([q.finish]).then((o) => q.resolve(o[0]!), q.reject);
      } else {
        for (const q of batch) q.reject(error);
      }
    }
  }
}
