import type { IncidentKind, Severity } from "../../core/model/incidents.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import { incidentSeverity } from "../../core/policy/alert-routing.ts";

export interface IncidentTraits {
  severity: Severity;
  owner: string | null;
}

/**
 * An incident's severity and owner, from its promise (by dataset) and pipeline as they are
 * now: the promise's say first, then the pipeline's, then the kind's default.
 */
export function incidentTraits(incident: { kind: IncidentKind; pipelineId: string | null; dataset: string | null }, pipelines: readonly Pipeline[]): IncidentTraits {
  const { pipelineId, dataset } = incident;
  const pipeline = pipelineId !== null
    ? pipelines.find((p) => p.id === pipelineId)
    : dataset !== null ? pipelines.find((p) => p.promises.some((promise) => promise.dataset === dataset)) : undefined;
  const promise = dataset !== null ? pipeline?.promises.find((p) => p.dataset === dataset) : undefined;
  return {
    severity: incidentSeverity(incident.kind, [promise?.severity, pipeline?.severity]),
    owner: promise?.owner ?? pipeline?.owner ?? null,
  };
}
