import type { AlertRecord } from "./port.ts";
import type { Row } from "./row-mappers.ts";

/**
 * An alert row joined with its incident, the same in both adapters. The state is derived, not
 * stored: delivered, or tried and failed (a retry is due), or not tried yet.
 */
export function toAlertRecord(r: Row): AlertRecord {
  const deliveredAt = r.delivered_at === null ? null : Number(r.delivered_at);
  const tries = Number(r.tries);
  return {
    id: Number(r.id),
    incidentKey: r.incident_key,
    incidentKind: r.kind,
    pipelineId: r.pipeline_id,
    dataset: r.dataset,
    businessDate: r.business_date,
    message: r.message,
    event: r.event,
    notifier: r.notifier,
    state: deliveredAt !== null ? "sent" : tries > 0 ? "failed" : "queued",
    tries,
    lastError: r.last_error,
    queuedAt: Number(r.event === "open" ? r.opened_at : r.event === "reopen" ? r.occasion : r.resolved_at),
    nextAttemptAt: deliveredAt === null ? Number(r.next_attempt_at) : null,
    deliveredAt,
  };
}
