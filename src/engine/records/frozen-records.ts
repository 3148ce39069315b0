import {
  canonicalFrozenPeriods, describeFrozenChange, diffFrozenPeriods, isNoFrozenChange, type FrozenPeriod,
} from "../../core/policy/frozen.ts";
import type { AuditEntry, SchedulingStore } from "../../store/port.ts";

/** The scope of the project's own frozen periods (`frozen` in idem.config.ts); no pipeline id looks like it. */
export const PROJECT_FROZEN_SCOPE = "*";

export const FROZEN_CHANGE_ACTION = "frozen-periods";

export interface FrozenRecordRequest {
  /** The pipeline whose own periods these are, or null for the project's. */
  pipelineId: string | null;
  periods: readonly FrozenPeriod[];
  /** The graph version that carries them (a pipeline's), or null (the project's). */
  graphVersion: string | null;
  actor: string;
  at: number;
}

/**
 * Records the frozen periods a pipeline (or the project) has now and, when they differ from the
 * last record, an audit entry saying what was added, removed or changed, once whoever sees it
 * first. Returns that entry, or null when nothing changed.
 */
export async function recordFrozenPeriods(store: SchedulingStore, request: FrozenRecordRequest): Promise<AuditEntry | null> {
  const scope = request.pipelineId ?? PROJECT_FROZEN_SCOPE;
  const periods = canonicalFrozenPeriods(request.periods);
  const text = JSON.stringify(periods);
  // A lost compare-and-set means another process recorded something meanwhile: decide again on it.
  for (let round = 0; round < 5; round++) {
    const recorded = await store.recordedFrozenPeriods(scope);
    if (recorded?.periods === text) return null;
    const before = recorded ? (JSON.parse(recorded.periods) as FrozenPeriod[]) : [];
    const change = diffFrozenPeriods(before, periods);
    if (isNoFrozenChange(change)) return null;
    const where = request.pipelineId === null ? "the project's frozen periods (idem.config.ts)" : `the frozen periods of ${request.pipelineId}`;
    const versions = request.pipelineId === null ? "" : ` (graph version ${recorded?.graphVersion ?? "none"} -> ${request.graphVersion})`;
    const entry = await store.recordFrozenPeriods({
      scope, expected: recorded?.periods ?? null, periods: text, graphVersion: request.graphVersion, at: request.at,
      audit: {
        at: request.at, actor: request.actor, action: FROZEN_CHANGE_ACTION, pipelineId: request.pipelineId, graphVersion: request.graphVersion,
        reason: `${where} changed${versions}: ${describeFrozenChange(change)}`,
        details: {
          scope: request.pipelineId === null ? "project" : "pipeline",
          previousGraphVersion: recorded?.graphVersion ?? null, previousRecordedAt: recorded?.recordedAt ?? null,
          ...change, periods,
        },
      },
    });
    if (entry) return entry;
  }
  return null;
}
