import { UsageError } from "../../../core/model/errors.ts";
import { addDays, localDate, parseBusinessDate } from "../../../core/time/dates.ts";
import type { Engine } from "../../../engine/engine.ts";
import type { TaskStateCell } from "../../../store/port.ts";
import { escapeHtml, html, raw, seg, type Html } from "../html.ts";
import { badge, links, page, plural, stateLabel, type View } from "../parts.ts";
import { pipelineHeader } from "./pipeline-tabs.ts";
import { gridOf, type GridRow, type Restatements } from "../reads.ts";
import type { Pipeline } from "../../../core/pipeline/types.ts";
import type { TaskState } from "../../../core/model/states.ts";
import { instancesLink, mappedCellState, mappedSummary } from "../mapped.ts";

export const GRID_SPANS = [30, 90, 365] as const;
const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const LEGEND = ["success", "failed", "running", "queued", "up_for_retry", "scheduled", "skipped", "upstream_failed", "missing", "not_due"];

/**
 * Business dates (newest first) x tasks, each cell a link to its task instance. The range and the
 * filter live in the URL (`days`, `to`, `only`), so a view is a deep link.
 */
export async function gridPage(engine: Engine, view: View, pipelineId: string): Promise<Html> {
  const p = engine.pipeline(pipelineId);
  const tz = p.schedule.timezone;
  const params = view.url.searchParams;
  const days = Number(params.get("days") ?? 90);
  if (!GRID_SPANS.includes(days as (typeof GRID_SPANS)[number])) throw new UsageError(`days=${params.get("days")}: expected one of ${GRID_SPANS.join(", ")}`);
  const today = localDate(engine.clock.now(), tz);
  let to: string;
  try {
    to = params.get("to") ? parseBusinessDate(params.get("to")!) : today;
  } catch (error) {
    throw new UsageError(`to: ${(error as Error).message}`);
  }
  const only = params.get("only") === "failed" ? "failed" : null;
  const from = addDays(to, -(days - 1));
  const [state, grid] = await Promise.all([engine.pipelineState(p.id), gridOf(engine, p.id, { fromDate: from, toDate: to })]);
  const taskIds = [...p.tasks.keys()];
  const byRun = cellsByRun(grid.tasks);
  const counts = new Map<string, number>();
  for (const t of grid.tasks) counts.set(cellState(t), (counts.get(cellState(t)) ?? 0) + 1);
  const missing = grid.rows.filter((r) => r.status === "missing").length;
  if (missing) counts.set("missing", missing);
  const restated = grid.rows.filter((r) => r.restate && r.restate.count > 0).length;

  const rows = only ? grid.rows.filter((r) => r.status === "failed" || r.status === "missing" || [...(byRun.get(r.runId ?? "")?.values() ?? [])].some((t) => cellState(t) === "failed" || cellState(t) === "upstream_failed")) : grid.rows;
  const body = gridRows(p, taskIds, rows, byRun, { monthHeaders: true });
  const span = (d: number) => html`<a href="${links.grid(p.id, { days: d, to: params.get("to"), only })}"${d === days ? html` class="on"` : ""}>${d} days</a>`;
  const toolbar = html`<div class="toolbar">
<span class="seg">${GRID_SPANS.map(span)}</span>
<span class="seg"><a href="${links.grid(p.id, { days, to: addDays(to, -days), only })}" title="older">← older</a><a href="${links.grid(p.id, { days, to: addDays(to, days), only })}" title="newer">newer →</a><a href="${links.grid(p.id, { days, only })}">today</a></span>
<span class="seg"><a href="${links.grid(p.id, { days, to: params.get("to") })}"${only ? "" : html` class="on"`}>all dates</a><a href="${links.grid(p.id, { days, to: params.get("to"), only: "failed" })}"${only ? html` class="on"` : ""}>only failed or missing</a></span>
<span class="sp"></span>
<span class="muted"><span class="date">${from}</span> → <span class="date">${to}</span> · ${plural(grid.rows.length, "interval")}</span>
</div>
<div class="toolbar counts">${[...LEGEND].filter((s) => counts.get(s)).map((s) => html`<span class="b s-${s}">${stateLabel(s)} <b>${(counts.get(s) ?? 0).toLocaleString("en")}</b></span>`)}${restated ? html`<span class="rst" title="business dates the schedule ran again as part of its trailing window (restate)">↻ restated <b>${restated.toLocaleString("en")}</b></span>` : ""}</div>`;

  const attention = grid.rows.filter((r) => r.status === "failed" || r.status === "missing");
  const newer = to < today ? await newerThan(engine, p.id, to, today) : null;
  const notice = newer
    ? html`<div class="note${newer.bad ? " bad" : ""}" role="status" id="newer">This view ends at <span class="date">${to}</span>; ${newer.bad
        ? html`<b>${plural(newer.bad, "newer date")} failed or ${newer.bad === 1 ? "is" : "are"} missing</b> after it (up to <span class="date">${today}</span>)`
        : html`${plural(newer.total, "newer date")} after it, none failed or missing`}. <a href="${links.grid(p.id, { days, only })}">Show the latest</a></div>`
    : "";
  const side = html`<aside class="panel gridside"><h2>In this range</h2>
${attention.length ? html`<ul class="attention">${attention.slice(0, 40).map((r) => {
    const failedTasks = [...(byRun.get(r.runId ?? "")?.values() ?? [])].filter((t) => cellState(t) === "failed").map((t) => t.taskId);
    return html`<li>${badge(r.status)} <a class="date" href="${r.runId ? links.run(r.runId) : links.ledger(p.id, { month: r.businessDate.slice(0, 7) })}">${r.businessDate}</a>
<div class="muted">${r.status === "missing" ? r.note : failedTasks.length ? html`failed: ${failedTasks.map((id, i) => html`${i ? ", " : ""}<a class="mono" href="${links.task(r.runId!, id)}">${id}</a>`)}` : "a task failed"}</div></li>`;
  })}</ul>${attention.length > 40 ? html`<p class="muted">and ${attention.length - 40} more: <a href="${links.grid(p.id, { days, to: params.get("to"), only: "failed" })}">only failed or missing</a></p>` : ""}`
    : html`<p class="muted">Nothing failed or missing.</p>`}
<h3>Columns</h3><ol class="cols-list">${taskIds.map((id) => {
    const t = p.tasks.get(id)!;
    return html`<li><span class="mono">${id}</span>${t.policy.pool ? html` <span class="pill">⛁ ${t.policy.pool}</span>` : ""}</li>`;
  })}</ol></aside>`;
  const content = html`${pipelineHeader(view, p, state, "grid")}
${notice}
${toolbar}
<div class="gridlayout"><div class="gridwrap"><table class="grid" data-tasks="${taskIds.join(",")}" data-pipeline="${p.id}" data-from="${from}" data-to="${to}" data-rows="${links.grid(p.id)}/rows">
<thead><tr><th class="dh">business date</th><th class="tk"><span>run</span></th>${taskIds.map((id) => html`<th class="tk" title="${id}"><span>${id}</span></th>`)}</tr></thead>
<tbody>${raw(body)}</tbody></table>
${rows.length === 0 ? html`<div class="empty">${only ? "No failed or missing interval in this range." : "No interval of this schedule falls in this range."}</div>` : ""}
</div>${side}</div>
<div class="legend" aria-label="legend">${LEGEND.map((s) => html`<span class="b s-${s}">${stateLabel(s)}</span>`)}<span class="b"><span class="c s-success retried"></span> retried (try 2 or later)</span>${taskIds.some((id) => isMapped(p, id)) ? html`<span class="b"><span class="c s-running mapped"></span> mapped: one cell for all its instances (hover for the counts)</span>` : ""}${p.restate ? html`<span class="rst">↻n restated n times (hover for when)</span><span class="rst">↻! a restatement was refused</span>` : ""}</div>`;
  return page(view, { title: `${p.id} grid`, active: "pipelines", body: content });
}

/**
 * The rows of some business dates (a month header before each new month when asked), as one
 * string: a 365 x 10 grid is 3,650 cells. A cell whose task is past its first try is marked
 * retried, with the try in its title and label.
 */
export function gridRows(p: Pipeline, taskIds: readonly string[], rows: readonly GridRow[], byRun: ReadonlyMap<string, ReadonlyMap<string, TaskStateCell>>, options: { monthHeaders: boolean }): string {
  let month = "";
  let body = "";
  for (const r of rows) {
    const date = r.businessDate;
    const newMonth = date.slice(0, 7) !== month;
    month = date.slice(0, 7);
    const weekday = WEEKDAYS[new Date(`${date}T12:00:00Z`).getUTCDay()]!;
    if (newMonth && options.monthHeaders) body += `<tr class="mh"><th colspan="${taskIds.length + 2}">${MONTHS[Number(date.slice(5, 7)) - 1]} ${date.slice(0, 4)}</th></tr>`;
    if (r.runId && r.status !== "missing" && r.status !== "not_due" && r.status !== "skipped") {
      const cells = byRun.get(r.runId);
      const base = `/ui/runs/${seg(r.runId)}/tasks/`;
      let tds = "";
      for (const id of taskIds) {
        const t = cells?.get(id);
        if (t?.mapped) {
          // One cell for every instance: coloured by the most pressing state, counted in its label, opening the drill-down.
          const label = escapeHtml(mappedSummary(t.mapped));
          tds += `<td><a class="c s-${cellState(t)} mapped" data-mapped href="${instancesLink(r.runId, id)}" title="${label}" aria-label="${escapeHtml(id)}: ${label}"></a></td>`;
          continue;
        }
        const retried = t !== undefined && t.tryNumber > 1;
        const label = t ? `${stateLabel(t.state)}${retried ? ` (try ${t.tryNumber})` : ""}` : "";
        tds += t
          ? `<td><a class="c s-${t.state}${retried ? " retried" : ""}" href="${base}${seg(id)}" title="${label}" aria-label="${id}: ${label}"></a></td>`
          : `<td><span class="c s-none"></span></td>`;
      }
      body += `<tr data-run="${r.runId}" data-date="${date}"><th><a href="/ui/runs/${seg(r.runId)}">${date}</a><span class="wd">${weekday}</span>${r.restate ? restateMarker(r.restate) : ""}</th><td class="rs"><a class="c s-${r.status}" data-rs="${r.runId}" href="/ui/runs/${seg(r.runId)}" aria-label="run: ${stateLabel(r.status)}"></a></td>${tds}</tr>`;
    } else {
      const title = `${stateLabel(r.status)}${r.note ? `: ${r.note}` : ""}`;
      const link = links.ledger(p.id, { month: date.slice(0, 7) });
      body += `<tr${r.runId ? ` data-run="${r.runId}"` : ""} data-date="${date}"><th><span class="date">${date}</span><span class="wd">${weekday}</span></th><td class="rs"><a class="c s-${r.status}" href="${link}" title="${escapeHtml(title)}" aria-label="run: ${escapeHtml(title)}"></a></td><td colspan="${taskIds.length}" class="faint gnote">${escapeHtml(title)}</td></tr>`;
    }
  }
  return body;
}

/**
 * The rows of one business date, for a grid that is open: the page script asks for them when a
 * run it does not show appears (a backfill, a trigger), and puts them in place.
 */
export async function gridRowsOfDate(engine: Engine, pipelineId: string, date: string): Promise<string> {
  const p = engine.pipeline(pipelineId);
  let day: string;
  try {
    day = parseBusinessDate(date);
  } catch (error) {
    throw new UsageError(`date: ${(error as Error).message}`);
  }
  const grid = await gridOf(engine, p.id, { fromDate: day, toDate: day });
  return gridRows(p, [...p.tasks.keys()], grid.rows, cellsByRun(grid.tasks), { monthHeaders: false });
}

/** How many dates after the shown range exist, and how many of them failed or are missing. */
async function newerThan(engine: Engine, pipelineId: string, to: string, today: string): Promise<{ total: number; bad: number } | null> {
  const expected = await engine.expected(pipelineId, { from: addDays(to, 1), to: addDays(today, 1) });
  const due = expected.filter((e) => e.status !== "not_due");
  if (due.length === 0) return null;
  return { total: due.length, bad: due.filter((e) => e.status === "failed" || e.status === "missing").length };
}

/** What a cell shows: a task instance's state, or for a mapped task the most pressing state of its instances. */
function cellState(t: TaskStateCell): TaskState {
  return t.mapped ? mappedCellState(t.mapped, t.state) : t.state;
}

function isMapped(p: Pipeline, taskId: string): boolean {
  const task = p.tasks.get(taskId);
  return task?.kind === "function" && task.map !== null;
}

function cellsByRun(tasks: readonly TaskStateCell[]): Map<string, Map<string, TaskStateCell>> {
  const byRun = new Map<string, Map<string, TaskStateCell>>();
  for (const t of tasks) {
    let row = byRun.get(t.runId);
    if (!row) byRun.set(t.runId, (row = new Map()));
    row.set(t.taskId, t);
  }
  return byRun;
}

/**
 * A restated business date: "↻2" (restated twice) or "↻!" (the latest restatement was refused,
 * a frozen date), with the count, the last time and the note in its title, never colour alone.
 */
function restateMarker(r: Restatements): string {
  const parts: string[] = [];
  if (r.count > 0) parts.push(`restated ${r.count === 1 ? "once" : `${r.count} times`}${r.lastAt !== null ? `, last at ${utcMinute(r.lastAt)}` : ""}`);
  if (r.note) parts.push(`not restated: ${r.note}`);
  const title = escapeHtml(parts.join("; "));
  // The time in the title is written in the page's zone by the script, like every other timestamp.
  return `<span class="rst" title="${title}" aria-label="${title}"${r.lastAt !== null ? ` data-title-t="${r.lastAt}"` : ""}>↻${r.count > 0 ? r.count : ""}${r.note ? "!" : ""}</span>`;
}

function utcMinute(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}
