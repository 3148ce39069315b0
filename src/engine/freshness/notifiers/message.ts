import type { IncidentKind } from "../../../core/model/incidents.ts";
import type { AlertView } from "./notifier.ts";

/** How each kind of incident is named to people (every kind: a new one is a compile error here). */
const KIND_NAMES: Record<IncidentKind | "test", string> = {
  late: "late",
  sla_missed: "SLA missed",
  late_publication: "published late",
  before_promise: "missed before the promise existed",
  did_not_run: "did not run",
  run_failed: "run failed",
  restate_failed: "restatement failed",
  scheduler_down: "scheduler down",
  notifier_failing: "notifier failing",
  test: "test",
};

/** One line naming the alert: "[CRITICAL] SLA missed: orders_daily 2026-09-01", "[RESOLVED] ...". */
export function subjectOf(alert: AlertView): string {
  const tag = alert.event === "resolve" ? "RESOLVED" : alert.event === "test" ? "TEST" : alert.severity.toUpperCase();
  const what = [alert.dataset ?? alert.pipelineId, alert.businessDate].filter((part) => part !== null).join(" ");
  return `[${tag}] ${KIND_NAMES[alert.kind]}${what ? `: ${what}` : ""}`;
}

/** The alert's facts as label and value, those it has only. */
export function factsOf(alert: AlertView): [string, string][] {
  const facts: [string, string | null][] = [
    ["business date", alert.businessDate],
    ["pipeline", alert.pipelineId],
    ["dataset", alert.dataset],
    ["run", alert.runId],
    ["severity", alert.severity],
    ["owner", alert.owner],
    ["opened", new Date(alert.openedAt).toISOString()],
    ["resolved", alert.resolvedAt === null ? null : new Date(alert.resolvedAt).toISOString()],
    ["incident", alert.key],
  ];
  return facts.filter((fact): fact is [string, string] => fact[1] !== null);
}

/** The cause, and on a resolution what ended it. */
export function causeOf(alert: AlertView): string {
  return alert.event === "resolve" && alert.resolution ? `${alert.message}\nresolved: ${alert.resolution}` : alert.message;
}

/** The whole alert as plain text (mail, a log, a digest's entry). */
export function plainText(alert: AlertView): string {
  return [subjectOf(alert), "", causeOf(alert), "", ...factsOf(alert).map(([label, value]) => `${label}: ${value}`), ...(alert.link ? ["", alert.link] : [])].join("\n");
}

export function digestSubject(alerts: readonly AlertView[]): string {
  const opened = alerts.filter((a) => a.event === "open").length;
  return `[DIGEST] ${alerts.length} idem alerts (${opened} opened, ${alerts.length - opened} resolved)`;
}

/**
 * The UI page that shows the incident: its run, else its pipeline (the ledger for a run that
 * did not happen), else the freshness page for a dataset, else the health page.
 */
export function linkOf(uiUrl: string | null, incident: { kind: IncidentKind | "test"; runId: string | null; pipelineId: string | null; dataset: string | null }): string | null {
  if (uiUrl === null) return null;
  const base = uiUrl.replace(/\/+$/, "");
  if (incident.runId !== null) return `${base}/ui/runs/${encodeURIComponent(incident.runId)}`;
  if (incident.pipelineId !== null) return `${base}/ui/pipelines/${encodeURIComponent(incident.pipelineId)}/${incident.kind === "did_not_run" ? "ledger" : "grid"}`;
  if (incident.dataset !== null) return `${base}/ui/freshness`;
  return `${base}/ui/health`;
}
