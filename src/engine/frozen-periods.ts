import { ArgumentError } from "../core/model/errors.ts";
import type { Pipeline } from "../core/pipeline/types.ts";
import { describeFrozen, frozenPeriodOf, type FrozenPeriod } from "../core/policy/frozen.ts";
import type { AuditEntry } from "../store/port.ts";
import { defaultActor } from "./acting.ts";
import type { EngineContext } from "./engine-context.ts";
import { FROZEN_CHANGE_ACTION, recordFrozenPeriods } from "./records/frozen-records.ts";
import { saveVersion } from "./records/pipeline-records.ts";

/**
 * Frozen periods as the engine applies them: a pipeline's own and the project's, each change to
 * the project's recorded (and audited) before a run or backfill names them, and a run of a frozen
 * business date refused unless opened with a reason.
 */
export class FrozenPeriods {
  readonly #e: Pick<EngineContext, "store" | "clock" | "pipeline">;
  /** The project's periods (idem.config.ts); null when this engine was not given them, so none are recorded. */
  readonly #project: readonly FrozenPeriod[] | null;

  constructor(context: Pick<EngineContext, "store" | "clock" | "pipeline">, project: readonly FrozenPeriod[] | undefined) {
    this.#e = context;
    this.#project = project ?? null;
  }

  get project(): readonly FrozenPeriod[] {
    return this.#project ?? [];
  }

  /** Frozen periods that apply to the pipeline: its own and the project's. */
  of(pipelineId: string): FrozenPeriod[] {
    return [...this.#e.pipeline(pipelineId).frozen, ...this.project];
  }

  /** The frozen periods of a pipeline, each with where it is declared, and the recorded changes to them, newest first. */
  async report(pipelineId: string, limit: number): Promise<{ periods: (FrozenPeriod & { declaredIn: "pipeline" | "project" })[]; changes: AuditEntry[] }> {
    const { store, clock } = this.#e;
    const pipeline = this.#e.pipeline(pipelineId);
    const now = clock.now();
    await this.recordVersion(pipeline, defaultActor(), now);
    const [own, project] = await Promise.all([
      store.pageAudit({ pipelineId, action: FROZEN_CHANGE_ACTION, limit }),
      store.pageAudit({ action: FROZEN_CHANGE_ACTION, limit: limit * 5 }),
    ]);
    const changes = [...own, ...project.filter((e) => e.pipelineId === null)].sort((a, b) => b.id - a.id).slice(0, limit);
    return {
      periods: [
        ...pipeline.frozen.map((p) => ({ ...p, declaredIn: "pipeline" as const })),
        ...this.project.map((p) => ({ ...p, declaredIn: "project" as const })),
      ],
      changes,
    };
  }

  /** Records a change of the project's frozen periods, when this engine was given them (from idem.config.ts). */
  async recordProject(actor: string, at: number): Promise<void> {
    if (this.#project === null) return;
    await recordFrozenPeriods(this.#e.store, { pipelineId: null, periods: this.#project, graphVersion: null, actor, at });
  }

  /** Records the pipeline's graph version and any change of the project's frozen periods, before a run or backfill names them. */
  async recordVersion(pipeline: Pipeline, actor: string, at: number): Promise<void> {
    await saveVersion(this.#e.store, pipeline, at, actor);
    await this.recordProject(actor, at);
  }

  assertNotFrozen(pipeline: Pipeline, businessDate: string, openFrozen: string | undefined): void {
    const frozen = frozenPeriodOf(this.of(pipeline.id), businessDate);
    if (frozen && !openFrozen) {
      throw new ArgumentError("openFrozen", (n) => `${businessDate} is ${describeFrozen(frozen)}; give ${n("openFrozen")} to run it anyway`, { pipeline: pipeline.id });
    }
  }
}
