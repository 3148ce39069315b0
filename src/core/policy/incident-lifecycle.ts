/**
 * An incident's lifecycle: open -> acknowledged (by whom, why, and until when: an acknowledgement
 * with an end is a snooze) -> resolved (by idem when its cause ends, or by a person with a
 * reason). Resolved is final. A snooze that ends with the incident unresolved makes it open
 * again. Both adapters decide a person's action here, in the transaction that writes it.
 */
export type IncidentState = "open" | "acknowledged" | "resolved";

export const INCIDENT_STATES: readonly IncidentState[] = ["open", "acknowledged", "resolved"];

/** Who resolves an incident whose cause ended (a publication, a run, a scheduler leading again). */
export const SYSTEM_ACTOR = "watchdog";

export interface IncidentAcknowledgement {
  at: number;
  by: string;
  reason: string;
  /** When the acknowledgement lapses (a snooze); null: until the incident resolves. */
  until: number | null;
}

/** The part of an incident its lifecycle reads. */
export interface IncidentStatus {
  acknowledgement: IncidentAcknowledgement | null;
  resolvedAt: number | null;
  resolvedBy: string | null;
}

/** A person's action on an incident; the reason is required. */
export type IncidentAction =
  | { kind: "acknowledge"; actor: string; reason: string; until: number | null }
  | { kind: "resolve"; actor: string; reason: string };

/** What an allowed action writes, or why it is refused. */
export type IncidentDecision =
  | { refusal: string; acknowledgement?: undefined; resolved?: undefined }
  | { refusal?: undefined; acknowledgement: IncidentAcknowledgement; resolved?: undefined }
  | { refusal?: undefined; acknowledgement?: undefined; resolved: { at: number; by: string; resolution: string } };

/** The incident's state at `now`: an acknowledgement whose end has come counts no more. */
export function incidentState(status: { resolvedAt: number | null; acknowledgement: Pick<IncidentAcknowledgement, "until"> | null }, now: number): IncidentState {
  if (status.resolvedAt !== null) return "resolved";
  const ack = status.acknowledgement;
  if (ack && (ack.until === null || ack.until > now)) return "acknowledged";
  return "open";
}

/**
 * Whether the end of a snooze is due to be told at `now`: the incident is unresolved, its newest
 * acknowledgement had an end that has come, and that acknowledgement's end was not told yet
 * (`reopenedFor` is the `at` of the acknowledgement whose end was last told). A snoozed page
 * that comes back unseen is the gap this closes; an acknowledgement without an end never lapses.
 */
export function reopenDue(status: { resolvedAt: number | null; acknowledgement: Pick<IncidentAcknowledgement, "at" | "until"> | null; reopenedFor: number | null }, now: number): boolean {
  const ack = status.acknowledgement;
  if (status.resolvedAt !== null || ack === null || ack.until === null) return false;
  return ack.until <= now && status.reopenedFor !== ack.at;
}

/** The audit action a person's action is recorded as. */
export function auditActionOf(action: IncidentAction): "incident-acknowledge" | "incident-snooze" | "incident-resolve" {
  if (action.kind === "resolve") return "incident-resolve";
  return action.until === null ? "incident-acknowledge" : "incident-snooze";
}

/**
 * Decides a person's action at `now`. An open or acknowledged incident may be acknowledged (again:
 * the newest acknowledgement replaces the last, so a snooze can be extended or made permanent) or
 * resolved; a resolved one takes nothing. A snooze must end after `now`; a reason is required.
 */
export function decideIncidentAction(key: string, status: IncidentStatus, action: IncidentAction, now: number): IncidentDecision {
  const reason = action.reason.trim();
  if (reason === "") return { refusal: `a reason is required to ${action.kind} incident ${key}` };
  if (status.resolvedAt !== null) {
    return { refusal: `incident ${key} was resolved by ${status.resolvedBy ?? SYSTEM_ACTOR}; there is nothing to ${action.kind}` };
  }
  if (action.kind === "resolve") return { resolved: { at: now, by: action.actor, resolution: reason } };
  if (action.until !== null && action.until <= now) return { refusal: `a snooze of incident ${key} must end after now` };
  return { acknowledgement: { at: now, by: action.actor, reason, until: action.until } };
}
