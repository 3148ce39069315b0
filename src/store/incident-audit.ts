import { SYSTEM_ACTOR } from "../core/policy/incident-lifecycle.ts";
import type { Incident, NewAuditEntry } from "./port.ts";

/**
 * The audit entry of an incident's transition, the same in both adapters: who (a person, or
 * core's SYSTEM_ACTOR when the cause ended), why, and which incident.
 */
export function incidentAudit(
  incident: Pick<Incident, "key" | "kind" | "pipelineId" | "runId" | "businessDate">,
  transition: { action: "incident-open" | "incident-acknowledge" | "incident-snooze" | "incident-resolve"; actor?: string; reason: string; at: number; until?: number | null },
): NewAuditEntry {
  return {
    at: transition.at,
    actor: transition.actor ?? SYSTEM_ACTOR,
    action: transition.action,
    pipelineId: incident.pipelineId,
    runId: incident.runId,
    reason: transition.reason,
    details: {
      incident: incident.key, kind: incident.kind,
      ...(incident.businessDate ? { businessDate: incident.businessDate } : {}),
      ...(transition.until ? { until: transition.until } : {}),
    },
  };
}
