import { StoreConflictError } from "./port.ts";

/**
 * The store's half of a restatement, checked under the run's lock in both adapters: only a run
 * that has ended, and ended before the newer interval fired, is restated. Anything else means
 * another scheduler (or a restart) got there first, or the run is live again.
 */
export function assertRestatable(run: Record<string, any>, endedBefore: number): void {
  if (run.state === "queued" || run.state === "running") {
    throw new StoreConflictError(`run ${run.run_id} is ${run.state}; it is not restated while live`);
  }
  if (run.ended_at !== null && run.ended_at >= endedBefore) {
    throw new StoreConflictError(`run ${run.run_id} already ran after the interval that asks for its restatement`);
  }
}
