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

/** One line naming the alert: "[CRITICAL] SLA missed: orders_daily 2026-09-01", "[RESOLVED] ...", "[CRITICAL SNOOZE ENDED] ...". */
export function subjectOf(alert: AlertView): string {
  const what = [alert.dataset ?? alert.pipelineId, alert.businessDate].filter((part) => part !== null).join(" ");
  return `[${tagOf(alert)}] ${KIND_NAMES[alert.kind]}${what ? `: ${what}` : ""}`;
}

function tagOf(alert: AlertView): string {
  switch (alert.event) {
    case "open": return alert.severity.toUpperCase();
    // A snoozed page comes back: as loud as its opening, and saying why it is back.
    case "reopen": return `${alert.severity.toUpperCase()} SNOOZE ENDED`;
    case "resolve": return "RESOLVED";
    case "test": return "TEST";
  }
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

/** The cause; on a resolution what ended it; on a reopen that the snooze ended with the cause still there. */
export function causeOf(alert: AlertView): string {
  switch (alert.event) {
    case "open":
    case "test":
      return alert.message;
    case "reopen": return `snooze ended: still ${alert.message}`;
    case "resolve": return alert.resolution ? `${alert.message}\nresolved: ${alert.resolution}` : alert.message;
  }
}

/** The subject and the cause's first line: a chat message's text, a page's summary, a digest's entry. */
export function lineOf(alert: AlertView): string {
  return `${subjectOf(alert)}: ${causeOf(alert).split("\n")[0]}`;
}

/**
 * The alert as a program receives it (a webhook's body, a command's stdin): the fields it has
 * always had, the message of a reopen saying that the snooze ended.
 */
export function receivedOf(alert: AlertView): AlertView {
  switch (alert.event) {
    case "open":
    case "resolve":
    case "test":
      return alert;
    case "reopen": return { ...alert, message: causeOf(alert) };
  }
}

/** The whole alert as plain text (mail, a log, a digest's entry). */
export function plainText(alert: AlertView): string {
  return [subjectOf(alert), "", causeOf(alert), "", ...factsOf(alert).map(([label, value]) => `${label}: ${value}`), ...(alert.link ? ["", alert.link] : [])].join("\n");
}

export function digestSubject(alerts: readonly AlertView[]): string {
  const count = (event: AlertView["event"]) => alerts.filter((a) => a.event === event).length;
  const reopened = count("reopen");
  return `[DIGEST] ${alerts.length} idem alerts (${count("open")} opened, ${reopened ? `${reopened} back after a snooze, ` : ""}${count("resolve")} resolved)`;
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
