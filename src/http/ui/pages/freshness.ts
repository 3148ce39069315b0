import type { Engine } from "../../../engine/engine.ts";
import type { DayStatus } from "../../../engine/freshness/report.ts";
import { html, type Html } from "../html.ts";
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

/** Per promised dataset and business date: deadline and SLO against when it was published; open incidents. */
export async function freshnessPage(engine: Engine, view: View): Promise<Html> {
  const days = Math.min(Math.max(Number(view.url.searchParams.get("days") ?? 7) || 7, 1), 60);
  const report = await engine.freshness(days);
  const now = engine.clock.now();
  const incidents = await engine.incidents({ open: false, limit: 50 });
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
    sub: "Each promised dataset, per business date: published when, against its deadline and SLO.",
    right: html`<span class="seg">${[7, 14, 30].map((n) => html`<a href="/ui/freshness?days=${n}"${n === days ? html` class="on"` : ""}>${n} days</a>`)}</span>`,
  })}
<div class="note${report.checker.status === "ok" ? " good" : " bad"}" role="status">${report.checker.status === "ok" ? "" : html`<b>Checker down. </b>`}${report.checker.message}</div>
${report.datasets.length ? datasets : html`<div class="panel"><div class="empty">No freshness promises: add <code>promises</code> to a pipeline.</div></div>`}
<div class="panel flush"><h2>Incidents</h2>${incidents.length ? html`<table class="t"><thead><tr><th>Opened</th><th>Kind</th><th>Dataset or pipeline</th><th>Business date</th><th>Message</th><th>Resolved</th></tr></thead><tbody>
${incidents.map((i) => html`<tr><td>${at(i.openedAt)}</td><td>${i.resolvedAt ? badge("success", undefined, i.kind) : badge("failed", undefined, i.kind)}</td><td class="mono">${i.dataset ?? i.pipelineId ?? ""}</td><td class="date">${i.businessDate ?? ""}</td><td>${i.message}</td>
<td>${i.resolvedAt ? html`${at(i.resolvedAt)}<div class="muted">${i.resolution ?? ""}</div>` : html`<b>open</b>`}</td></tr>`)}</tbody></table>` : html`<div class="empty">No incident.</div>`}</div>`;
  return page(view, { title: "Freshness", active: "freshness", body });
}
