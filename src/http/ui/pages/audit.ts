import { UsageError } from "../../../core/model/errors.ts";
import { addDays, parseBusinessDate, startOfDay } from "../../../core/time/dates.ts";
import type { Engine } from "../../../engine/engine.ts";
import { html, query, type Html } from "../html.ts";
import { at, links, page, pageHead, type View } from "../parts.ts";

const PAGE = 100;

/** Who did what, when and why: filterable by actor, action, pipeline and a date range (days in the selected zone). */
export async function auditPage(engine: Engine, view: View): Promise<Html> {
  const params = view.url.searchParams;
  const filter = {
    actor: params.get("actor") || undefined,
    action: params.get("action") || undefined,
    pipelineId: params.get("pipeline") || undefined,
    from: params.get("from") || undefined,
    to: params.get("to") || undefined,
  };
  const zone = zoneFrom(params.get("tz"));
  // The days are the reader's: their bounds are instants in the zone the page shows.
  const iso = (ms: number) => new Date(ms).toISOString();
  const cursor = params.get("after");
  if (cursor !== null && !/^\d+$/.test(cursor)) throw new UsageError(`after=${cursor}: expected the number of an audit entry`);
  const entries = await engine.auditPage({
    pipelineId: filter.pipelineId, actor: filter.actor, action: filter.action,
    from: filter.from ? iso(startOfDay(dateParam(filter.from, "from"), zone)) : undefined,
    to: filter.to ? iso(startOfDay(addDays(dateParam(filter.to, "to"), 1), zone)) : undefined,
    limit: PAGE, after: cursor === null ? undefined : Number(cursor),
  });
  const actions = ["trigger", "rerun", "clear", "skip", "mark-success", "mark-failed", "pause", "unpause", "backfill", "backfill-pause", "backfill-resume", "backfill-cancel", "pool-set", "pool-delete"];
  // Days were read in this zone: the page shows its times in it too (the script is told), one zone per page.
  const pinned = filter.from || filter.to ? html`<span hidden data-page-zone="${zone}"></span>` : "";
  const form = html`${pinned}<form method="get" class="row" data-zoned>
<label>Actor<input name="actor" value="${filter.actor ?? ""}" placeholder="anyone"></label>
<label>Action<select name="action"><option value="">any</option>${actions.map((a) => html`<option${filter.action === a ? " selected" : ""}>${a}</option>`)}</select></label>
<label>Pipeline<select name="pipeline"><option value="">any</option>${engine.pipelines().map((p) => html`<option${filter.pipelineId === p.id ? " selected" : ""}>${p.id}</option>`)}</select></label>
<label>From<input type="date" name="from" value="${filter.from ?? ""}"></label>
<label>To (inclusive)<input type="date" name="to" value="${filter.to ?? ""}"></label>
<button type="submit" class="primary">Filter</button><a class="btn" href="/ui/audit">Clear filters</a>
</form><p class="faint">${filter.from || filter.to ? html`Days are read in <b>${zone}</b>, the zone this page shows.` : "Days are read in the zone this page shows (the zone selector above)."}</p>`;
  const rows = entries.items.map((e) => html`<tr><td>${at(e.at, true)}</td><td><b>${e.actor}</b></td><td><span class="pill">${e.action}</span></td>
<td>${e.pipelineId ? html`<a href="${links.grid(e.pipelineId)}">${e.pipelineId}</a>` : html`<span class="faint">–</span>`}</td>
<td>${e.runId ? html`<a class="mono" href="${e.taskId ? links.task(e.runId, e.taskId) : links.run(e.runId)}">${e.runId}${e.taskId ? ` ${e.taskId}` : ""}</a>` : ""}</td>
<td>${e.reason ?? html`<span class="faint">no reason</span>`}</td><td class="mono faint">${Object.keys(e.details).length ? JSON.stringify(e.details) : ""}</td></tr>`);
  const next = entries.next !== null ? html`<a class="btn" href="/ui/audit${query({ ...Object.fromEntries(params), after: entries.next })}">Older entries →</a>` : "";
  const body = html`${pageHead({ title: "Audit log", sub: "Every manual action, with who, when, why and the graph version. Nobody turns a failure green without a record." })}
<div class="panel">${form}</div>
<div class="panel flush">${entries.items.length ? html`<table class="t audit"><thead><tr><th>At</th><th>Actor</th><th>Action</th><th>Pipeline</th><th>Run / task</th><th>Reason</th><th>Details</th></tr></thead><tbody>${rows}</tbody></table>` : html`<div class="empty">No audit entry matches.</div>`}</div>
${next}`;
  return page(view, { title: "Audit", active: "audit", body });
}

function dateParam(value: string, name: string): string {
  try {
    return parseBusinessDate(value);
  } catch (error) {
    throw new UsageError(`${name}: ${(error as Error).message}`);
  }
}

function zoneFrom(tz: string | null): string {
  if (!tz) return "UTC";
  try {
    new Intl.DateTimeFormat("en", { timeZone: tz });
    return tz;
  } catch {
    throw new UsageError(`tz=${tz}: not a time zone`);
  }
}
