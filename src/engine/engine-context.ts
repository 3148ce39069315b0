import type { Clock } from "../core/model/clock.ts";
import type { Pipeline } from "../core/pipeline/types.ts";
import type { AuditEntry, Store } from "../store/port.ts";
import type { EngineEvents } from "./events/engine-events.ts";
import type { PipelineCatalog } from "./project/catalog.ts";

/**
 * What the engine's role files (run actions, reads, scheduling, pools, ...) share of the engine:
 * its store and clock, its pipelines, and how an action is audited and announced. The `Engine`
 * facade makes one and hands each role only the part its constructor's type names.
 */
export interface EngineContext {
  store: Store;
  clock: Clock;
  stateDir: string;
  catalog: PipelineCatalog;
  /** Pipelines were given: a read by pipeline id checks that it exists; else the id is taken as given. */
  pipelinesLoaded: boolean;
  /** The loaded pipeline, or a NotFoundError naming the known ones and the files that did not load. */
  pipeline(id: string): Pipeline;
  /** Appends an action on a pipeline to the audit log, at the clock's now. */
  audit(actor: string, action: string, pipeline: Pipeline, runId: string | null, taskId: string | null, reason: string | null, details: Record<string, unknown>): Promise<AuditEntry>;
  /**
   * A manual action changed work or scheduling: the workers and the scheduler of this state
   * directory look now (a run or backfill to start, a run ended by hand) instead of at their
   * next poll or tick. PostgreSQL stores also notify every machine from the writes themselves.
   */
  announce(): void;
  /** This process's engine events: what an action did that subscribers (traces, logs) hear of. */
  events: EngineEvents;
}
