import type { Engine } from "../../../engine/engine.ts";
import type { DayStatus } from "../../../engine/freshness/report.ts";
import { ALERT_STATES, type AlertRecord, type AlertState } from "../../../store/port.ts";
import { html, query, type Html } from "../html.ts";
import { incidentStatus } from "../incidents.ts";
import { sentence } from "../sentence.ts";
import { at, badge, duration, links, page, pageHead, type View } from "../parts.ts";

/** How a publication stands against its deadline, in words: "late by 42 min", "12 min before the deadline". */
export function againstDeadline(status: DayStatus, publishedAt: number | null, deadlineAt: number, now: number): string {
  if (publishedAt === null) {
    if (now <= deadlineAt) return `not published yet; deadline in ${duration(deadlineAt - now)}`;
    return `not published; late by ${duration(now - deadlineAt)}`;
  }
  if (publishedAt > deadlineAt) return `late by ${duration(publishedAt - deadlineAt)}`;
  const margin = `${duration(deadlineAt - publishedAt)} before the deadline`;
  return status === "late" ? `after the SLO, ${margin}` : margin;
}

const ALERT_BADGE: Record<AlertState, string> = { sent: "success", failed: "failed", queued: "queued" };

/** Alerts sent for incidents, newest first, filtered by the URL (`incident`, `alerts` = a state). */
function alertsPanel(alerts: readonly AlertRecord[], filter: { incident: string | null; state: AlertState | null; days: number }, more: boolean): Html {
  const link = (q: { incident?: string | null; alerts?: string | null }) => `/ui/freshness${query({ days: filter.days === 7 ? null : filter.days, incident: q.incident, alerts: q.alerts })}#alerts`;
  const states = html`<span class="seg">${[null, ...ALERT_STATES].map((s) => html`<a href="${link({ incident: filter.incident, alerts: s })}"${s === filter.state ? html` class="on"` : ""}>${s ?? "all"}</a>`)}</span>`;
  return html`<div class="panel flush" id="alerts"><div class="logbar"><h2 class="inline">Alerts sent</h2>${states}
${filter.incident ? html`<span class="muted">incident <span class="mono">${filter.incident}</span> · <a href="${link({ alerts: filter.state })}">every incident</a></span>` : ""}</div>
${alerts.length ? html`<table class="t"><thead><tr><th>Queued</th><th>Notifier</th><th>Kind</th><th>Incident</th><th>State</th><th>Tries</th><th>Sent or next try</th><th>Last error</th></tr></thead><tbody>
${alerts.map((a) => html`<tr><td>${at(a.queuedAt)}</td><td class="mono">${a.notifier}</td><td>${a.event}</td>
<td><a class="mono" href="${link({ incident: a.incidentKey, alerts: filter.state })}">${a.incidentKind}</a> <span class="muted">${a.dataset ?? a.pipelineId ?? ""}${a.businessDate ? html` · <span class="date">${a.businessDate}</span>` : ""}</span></td>
<td>${badge(ALERT_BADGE[a.state], undefined, a.state)}</td><td class="num">${a.tries}</td>
<td>${a.deliveredAt !== null ? at(a.deliveredAt) : html`<span class="muted">next try ${at(a.nextAttemptAt)}</span>`}</td><td>${a.lastError ?? ""}</td></tr>`)}</tbody></table>
${more ? html`<p class="muted">Showing the newest ${alerts.length}; the API pages through the rest (<code>GET /api/v1/alerts</code>).</p>` : ""}`
    : html`<div class="empty">${filter.incident || filter.state ? "No alert matches." : "No alert was queued: incidents alert the notifiers their promise names."}</div>`}</div>`;
}

/** Per promised dataset and business date: deadline and SLO against when it was published; incidents and the alerts they sent. */
export async function freshnessPage(engine: Engine, view: View): Promise<Html> {
  const params = view.url.searchParams;
  const days = Math.min(Math.max(Number(params.get("days") ?? 7) || 7, 1), 60);
  const incident = params.get("incident") || null;
  const stateParam = params.get("alerts");
  const alertState = ALERT_STATES.includes(stateParam as AlertState) ? (stateParam as AlertState) : null;
  const report = await engine.freshness(days);
  const now = engine.clock.now();
  const incidents = await engine.incidents({ open: false, limit: 50 });
  const alerts = await engine.alertsPage({ incidentKey: incident ?? undefined, state: alertState ?? undefined, limit: 100 });
  const datasets = report.datasets.map((d) => html`<div class="panel flush"><div class="logbar"><h2 class="inline mono">${d.dataset}</h2>
${d.due ? badge(d.due.status) : badge("not_yet_due")}
<span class="muted">pipeline <a href="${links.grid(d.pipelineId)}">${d.pipelineId}</a> · deadline ${d.deadline}${d.slo ? ` · SLO ${d.slo}` : ""} · zone ${d.timezone}${d.owner ? ` · owner ${d.owner}` : ""}</span>
<span class="sp"></span><span class="muted">newest: ${d.newest ? html`<span class="date">${d.newest.businessDate}</span> at ${at(d.newest.publishedAt)}` : "never published"}</span></div>
<table class="t"><thead><tr><th>Business date</th><th>Status</th><th>Published</th><th>Deadline</th><th>Against the deadline</th></tr></thead><tbody>
${[...d.days].reverse().map((day) => html`<tr><td class="date">${day.businessDate}</td><td>${badge(day.status)}</td><td>${day.publishedAt ? at(day.publishedAt) : html`<span class="faint">–</span>`}${day.emptyReason ? html`<div class="muted">empty on purpose: ${day.emptyReason}</div>` : ""}</td>
<td>${at(day.deadlineAt)}</td><td>${day.status === "not_yet_due" && day.publishedAt === null ? html`<span class="faint">not due yet</span>` : againstDeadline(day.status, day.publishedAt, day.deadlineAt, now)}</td></tr>`)}
</tbody></table></div>`);
  const body = html`${pageHead({
    title: "Freshness",
    sub: "Each promised dataset, per business date: published when, against its deadline and SLO; incidents and the alerts they sent.",
    right: html`<span class="seg">${[7, 14, 30].map((n) => html`<a href="/ui/freshness?days=${n}"${n === days ? html` class="on"` : ""}>${n} days</a>`)}</span>`,
  })}
<div class="note${report.checker.status === "ok" ? " good" : " bad"}" role="status">${report.checker.status === "ok" ? "" : html`<b>Checker down. </b>`}${sentence(report.checker.message)}</div>
${report.datasets.length ? datasets : html`<div class="panel"><div class="empty">No freshness promises: add <code>promises</code> to a pipeline.</div></div>`}
<div class="panel flush"><h2>Incidents</h2>${incidents.length ? html`<table class="t"><thead><tr><th>Opened</th><th>Kind</th><th>Dataset or pipeline</th><th>Business date</th><th>Message</th><th>State</th><th>Alerts</th></tr></thead><tbody>
${incidents.map((i) => html`<tr><td>${at(i.openedAt)}</td><td>${i.resolvedAt ? badge("success", undefined, i.kind) : badge("failed", undefined, i.kind)}</td><td class="mono">${i.dataset ?? i.pipelineId ?? ""}</td><td class="date">${i.businessDate ?? ""}</td><td>${sentence(i.message)}</td>
<td>${incidentStatus(i)}</td>
<td>${i.notify.length ? html`<a href="/ui/freshness${query({ days: days === 7 ? null : days, incident: i.key })}#alerts">${i.notify.join(", ")}</a>` : html`<span class="faint">none</span>`}</td></tr>`)}</tbody></table>` : html`<div class="empty">No incident.</div>`}</div>
${alertsPanel(alerts.items, { incident, state: alertState, days }, alerts.next !== null)}`;
  return page(view, { title: "Freshness", active: "freshness", body });
}
