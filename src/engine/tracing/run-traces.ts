import type { EngineEvents } from "../events/engine-events.ts";
import type { AttemptFinished } from "../events/event-map.ts";
import type { RunRecord } from "../../store/port.ts";
import type { EndedSpan, OtelExport } from "./otel-export.ts";

/**
 * Traces of runs, written from what the store recorded once each part ended: a span per attempt
 * when its result is recorded, and the run's span when the run ends, whatever ended it (an
 * attempt's result, a lost attempt's, an operator's skip or mark: `run:ended`, from the process
 * that recorded the end), so a run with no attempt at all has its span too. No span is held
 * open, so a run of hours, or one whose worker was killed, costs nothing until it ends. The SDK
 * loads with the first span.
 */
export class RunTraces {
  readonly #getRun: (runId: string) => Promise<RunRecord | null>;
  readonly #env: NodeJS.ProcessEnv;
  #export: Promise<OtelExport> | null = null;
  readonly #pending = new Set<Promise<void>>();
  #failed = false;

  constructor(getRun: (runId: string) => Promise<RunRecord | null>, env: NodeJS.ProcessEnv = process.env) {
    this.#getRun = getRun;
    this.#env = env;
  }

  /** Writes a span for each attempt (`attempt:finished`) and each run (`run:ended`) the process records as ended; returns the unsubscribe. */
  follow(events: EngineEvents): () => void {
    return events.subscribe({
      "attempt:finished": (fact) => this.attemptEnded(fact),
      "run:ended": ({ runId }) => this.runEnded(runId),
    });
  }

  /** Writes the run's span from its record (its start, or its creation when nothing started, and its end). */
  runEnded(runId: string): void {
    this.#track(this.#writeRun(runId));
  }

  attemptEnded(fact: AttemptFinished): void {
    // A sensor's poke that found its condition unmet is no attempt's end: it pokes again.
    if (fact.outcome === "rescheduled" && fact.errorClass === null) return;
    this.#track(this.#writeAttempt(fact));
  }

  /** Sends the spans written so far: the process is ending. */
  async shutdown(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
    if (this.#export) await (await this.#export).shutdown().catch((error) => this.#warn(error));
  }

  async #writeAttempt(fact: AttemptFinished): Promise<void> {
    const otel = await this.#otel();
    const failed = fact.errorClass !== null;
    otel.write({
      name: `${fact.pipelineId}.${fact.taskId}`,
      runId: fact.runId,
      attempt: { taskId: fact.taskId, tryNumber: fact.tryNumber },
      startMs: fact.startedAt,
      endMs: fact.endedAt,
      attributes: {
        "idem.pipeline": fact.pipelineId,
        "idem.task": fact.taskId,
        "idem.run_id": fact.runId,
        "idem.business_date": fact.businessDate,
        "idem.try": fact.tryNumber,
        "idem.outcome": fact.outcome,
        ...(fact.taskState === null ? {} : { "idem.state": fact.taskState }),
        ...(failed ? { "error.type": fact.errorClass!, "idem.error_message": fact.errorMessage ?? "" } : {}),
      },
      error: failed ? `${fact.errorClass}: ${fact.errorMessage ?? ""}` : null,
    });
  }

  async #writeRun(runId: string): Promise<void> {
    const otel = await this.#otel();
    const run = await this.#getRun(runId);
    if (run && run.endedAt !== null) otel.write(runSpan(run));
  }

  #otel(): Promise<OtelExport> {
    this.#export ??= import("./otel-export.ts").then(({ OtelExport }) => new OtelExport(this.#env));
    return this.#export;
  }

  #track(work: Promise<void>): void {
    const tracked = work.catch((error) => this.#warn(error)).finally(() => this.#pending.delete(tracked));
    this.#pending.add(tracked);
  }

  /** Tracing never stops the work: one line, once, and the spans that fail are dropped. */
  #warn(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    process.stderr.write(`idem: traces: ${error instanceof Error ? error.message : String(error)}\n`);
  }
}

function runSpan(run: RunRecord): EndedSpan {
  return {
    name: `${run.pipelineId} ${run.businessDate}`,
    runId: run.runId,
    attempt: null,
    startMs: run.startedAt ?? run.createdAt,
    endMs: run.endedAt!,
    attributes: {
      "idem.pipeline": run.pipelineId,
      "idem.run_id": run.runId,
      "idem.business_date": run.businessDate,
      "idem.state": run.state,
      "idem.trigger": run.trigger,
    },
    error: run.state === "failed" ? `run ${run.runId} failed` : null,
  };
}
