import { DefinitionError } from "./errors.ts";

/** What an incident is about; each kind opens for one cause and resolves when that cause ends. */
export type IncidentKind =
  | "late"
  | "sla_missed"
  | "late_publication"
  /** The one summary of a promise's business dates whose deadline passed before the promise existed. */
  | "before_promise"
  | "did_not_run"
  | "run_failed"
  | "restate_failed"
  | "scheduler_down"
  | "notifier_failing";

/** Every kind, so a table keyed by kind (`Record<IncidentKind, ...>`) is checked whole. */
export const INCIDENT_KINDS: readonly IncidentKind[] = [
  "late", "sla_missed", "late_publication", "before_promise", "did_not_run", "run_failed", "restate_failed", "scheduler_down", "notifier_failing",
];

/** How urgent an incident is; the same four levels as PagerDuty's Events API, most urgent first. */
export type Severity = "critical" | "error" | "warning" | "info";

export const SEVERITIES: readonly Severity[] = ["critical", "error", "warning", "info"];

/**
 * A pipeline's or promise's say on severity: one level for every incident it causes, or a
 * level per kind (`{ sla_missed: "critical", late: "warning" }`), the other kinds keeping theirs.
 */
export type SeverityOverride = Severity | Partial<Record<IncidentKind, Severity>>;

/** Checks an author's `severity`; `where` names it ("promise orders_daily: severity"). */
export function validateSeverityOverride(value: unknown, where: string): SeverityOverride {
  if (typeof value === "string") {
    if ((SEVERITIES as readonly string[]).includes(value)) return value as Severity;
    throw new DefinitionError(`${where}: ${JSON.stringify(value)} is not a severity (${SEVERITIES.join(", ")})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new DefinitionError(`${where}: expected a severity (${SEVERITIES.join(", ")}) or one per incident kind`);
  }
  for (const [kind, level] of Object.entries(value)) {
    if (!(INCIDENT_KINDS as readonly string[]).includes(kind)) throw new DefinitionError(`${where}: ${JSON.stringify(kind)} is not an incident kind (${INCIDENT_KINDS.join(", ")})`);
    if (!(SEVERITIES as readonly string[]).includes(level as string)) throw new DefinitionError(`${where}.${kind}: ${JSON.stringify(level)} is not a severity (${SEVERITIES.join(", ")})`);
  }
  return { ...(value as Partial<Record<IncidentKind, Severity>>) };
}
