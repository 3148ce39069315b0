import type { IncidentView } from "../../engine/engine.ts";
import { html, seg, type Html } from "./html.ts";
import { at, badge, type View } from "./parts.ts";
import { sentence } from "./sentence.ts";

/** How long the on-call page's snooze lasts: each a button's value. */
export const SNOOZES = [["1h", "1 h"], ["4h", "4 h"], ["1d", "1 day"]] as const;

/** Who acknowledged (until when, why) or who resolved (why), as one line. */
export function incidentStatus(i: IncidentView): Html {
  if (i.state === "resolved") {
    return html`${badge("success", undefined, "resolved")} ${at(i.resolvedAt)} by <b>${i.resolvedBy ?? "watchdog"}</b>${i.resolution ? html`: ${sentence(i.resolution)}` : ""}`;
  }
  const ack = i.acknowledgement;
  if (i.state === "acknowledged" && ack) {
    return html`${badge("queued", undefined, ack.until === null ? "acknowledged" : "snoozed")} by <b>${ack.by}</b> ${at(ack.at)}${ack.until === null ? "" : html`, until ${at(ack.until)}`}: ${ack.reason}`;
  }
  return html`${badge("failed", undefined, "open")}${ack ? html` <span class="muted">(snoozed by ${ack.by} until ${at(ack.until)})</span>` : ""}`;
}

/**
 * The unresolved incidents, each with its state and one form: a reason, then Acknowledge,
 * Snooze (1 h, 4 h, 1 day) or Resolve in one click. Viewers see the buttons disabled, with why.
 */
export function incidentsPanel(view: View, incidents: readonly IncidentView[]): Html {
  if (incidents.length === 0) return html`<p class="muted">None.</p>`;
  const may = view.principal?.mayAct ?? false;
  const why = view.principal ? `${view.principal.actor} is a viewer: actions need an operator token` : "sign in to act";
  const off = may ? "" : html` disabled title="${why}"`;
  return html`<ul class="attention incidents">${incidents.map((i) => html`<li data-incident="${i.key}">
<div>${at(i.openedAt)} · ${sentence(i.message)}</div>
<div class="incident-state">${incidentStatus(i)}</div>
<form method="post" action="/ui/incidents/${seg(i.key)}" class="row">
<input type="hidden" name="_csrf" value="${view.csrf}">
<input type="hidden" name="back" value="${view.url.pathname + view.url.search}">
<label>Reason<input name="reason" required minlength="3" placeholder="why, for the audit log" autocomplete="off"></label>
<div class="inline">
<button type="submit" name="do" value="acknowledge"${off}>Acknowledge</button>
${SNOOZES.map(([value, label]) => html`<button type="submit" name="snooze" value="${value}"${off}>Snooze ${label}</button>`)}
<button type="submit" name="do" value="resolve" class="primary"${off}>Resolve</button>
</div>${may ? "" : html`<span class="muted">${why}</span>`}
</form></li>`)}</ul>`;
}
