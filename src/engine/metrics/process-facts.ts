import type { ClaimedAttempt } from "../../store/port.ts";

/**
 * What a process knows of its own work and the store does not keep: how long each attempt waited
 * to be claimed and how long its task code ran, how long each scheduler tick took and how late.
 * The worker and the scheduler tell it through their callbacks (`buildWorker`,
 * `buildScheduler`); the metrics subscribe once they are asked for. Until then a fact costs one
 * call that finds no subscriber.
 */
export interface ProcessFacts {
  attemptClaimed(fact: AttemptClaimed): void;
  attemptEnded(fact: AttemptEnded): void;
  tickEnded(fact: TickEnded): void;
}

export interface AttemptClaimed {
  pipelineId: string;
  taskId: string;
  /** From when the task instance became ready (queued, or its retry due) until a worker claimed it. */
  queueWaitMs: number;
}

export interface AttemptEnded {
  pipelineId: string;
  taskId: string;
  runId: string;
  businessDate: string;
  tryNumber: number;
  /** The task instance's state once the attempt's result was recorded (success, failed, up_for_retry, ...). */
  taskState: string | null;
  /** The run's state once it was recorded: success or failed when this attempt ended the run. */
  runState: string | null;
  /** What the attempt's record says: its start and end (epoch ms), its outcome and error. */
  startedAt: number;
  endedAt: number;
  outcome: string;
  errorClass: string | null;
  errorMessage: string | null;
  durationMs: number;
}

export interface TickEnded {
  /** Whether this scheduler held the lead in the tick (a standby's tick only looks at the lease). */
  leader: boolean;
  durationMs: number;
  /** How late the tick began after the time the tick before it asked for (0: on time, or woken early). */
  lagMs: number;
}

/** What a worker tells of an attempt whose result it recorded, as the metrics and traces hear it. */
export function attemptEndedFact(
  claim: Pick<ClaimedAttempt, "pipelineId" | "taskId" | "runId" | "businessDate" | "tryNumber">,
  outcome: Omit<AttemptEnded, "pipelineId" | "taskId" | "runId" | "businessDate" | "tryNumber">,
): AttemptEnded {
  const { pipelineId, taskId, runId, businessDate, tryNumber } = claim;
  return { pipelineId, taskId, runId, businessDate, tryNumber, ...outcome };
}

/** The process's one ProcessFacts: hands each fact to every subscriber. */
export class ProcessFactsHub implements ProcessFacts {
  readonly #subscribers = new Set<ProcessFacts>();

  subscribe(subscriber: ProcessFacts): () => void {
    this.#subscribers.add(subscriber);
    return () => this.#subscribers.delete(subscriber);
  }

  attemptClaimed(fact: AttemptClaimed): void {
    for (const s of this.#subscribers) s.attemptClaimed(fact);
  }

  attemptEnded(fact: AttemptEnded): void {
    for (const s of this.#subscribers) s.attemptEnded(fact);
  }

  tickEnded(fact: TickEnded): void {
    for (const s of this.#subscribers) s.tickEnded(fact);
  }
}
