import { UsageError } from "../../../core/model/errors.ts";
import { frozenPeriodOf } from "../../../core/policy/frozen.ts";
import { addDays, localDate } from "../../../core/time/dates.ts";
import type { Engine } from "../../../engine/engine.ts";
import type { ExpectedRun, ExpectedStatus } from "../../../engine/scheduler/ledger.ts";
import { html, type Html } from "../html.ts";
import { actionForm, at, badge, links, page, pageHead, plural, stateLabel, type View } from "../parts.ts";
import { pipelineHeader } from "./pipeline-tabs.ts";
import { incidentsPanel } from "../incidents.ts";
import { sentence } from "../sentence.ts";
import { failureOf, type Failure } from "../reads.ts";

const MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
/** Worst first: a day with several intervals (an hourly schedule) shows the worst of them. */
const SEVERITY: string[] = ["missing", "failed", "pending", "running", "queued", "skipped", "success", "not_due"];
const STATUS_WORDS: Record<string, string> = {
  pending: "pending",
  success: "ran: success",
  failed: "ran: failed",
  running: "running",
  queued: "queued",
  skipped: "skipped by policy",
  missing: "missing",
  not_due: "not due yet",
};

/**
 * The ledger of expected runs as a calendar: every interval the schedule says was due, as ran,
 * running, skipped by policy, or missing with its reason. `?month=YYYY-MM` is the last month shown.
 */
export async function ledgerPage(engine: Engine, view: View, pipelineId: string): Promise<Html> {
  const p = engine.pipeline(pipelineId);
  const tz = p.schedule.timezone;
  const monthParam = view.url.searchParams.get("month");
  if (monthParam !== null && !/^\d{4}-(0[1-9]|1[0-2])$/.test(monthParam)) throw new UsageError(`month=${monthParam}: expected YYYY-MM`);
  const last = monthParam ?? localDate(engine.clock.now(), tz).slice(0, 7);
  const months = [monthBefore(last, 3), monthBefore(last, 2), monthBefore(last, 1), last];
  const from = `${months[0]}-01`;
  const to = `${monthBefore(last, -1)}-01`;
  const [state, entries] = await Promise.all([engine.pipelineState(p.id), engine.expected(p.id, { from, to })]);
  const frozen = engine.frozenPeriods(p.id);
  const byDate = new Map<string, ExpectedRun[]>();
  for (const e of entries) {
    const list = byDate.get(e.interval.businessDate) ?? [];
    list.push(e);
    byDate.set(e.interval.businessDate, list);
  }
  const counts = new Map<string, number>();
  for (const e of entries) counts.set(e.status, (counts.get(e.status) ?? 0) + 1);
  const attention = entries.filter((e) => e.status === "missing" || e.status === "failed").reverse();

  const calendar = months.map((month) => {
    const first = `${month}-01`;
    const lead = (new Date(`${first}T12:00:00Z`).getUTCDay() + 6) % 7; // weeks start on Monday
    const cells: Html[] = [];
    for (let i = 0; i < lead; i++) cells.push(html`<span class="day blank"></span>`);
    for (let date = first; date.startsWith(month); date = addDays(date, 1)) {
      const list = byDate.get(date) ?? [];
      const worst = SEVERITY.find((s) => list.some((e) => e.status === s)) ?? null;
      const freeze = frozenPeriodOf(frozen, date);
      const label = `${date}: ${worst ? STATUS_WORDS[worst] : "no interval"}${list.length > 1 ? ` (${list.length} intervals)` : ""}${list.find((e) => e.note)?.note ? ` (${list.find((e) => e.note)!.note})` : ""}${freeze ? ` · frozen by ${freeze.owner}: ${freeze.reason}` : ""}${restatedWords(list)}`;
      const cls = `day${worst ? ` s-${worst}` : ""}${freeze ? " frozen" : ""}`;
      const single = list.length === 1 ? list[0]! : null;
      const href = single?.runId ? links.run(single.runId) : list.length > 1 ? links.grid(p.id, { days: 30, to: date }) : null;
      // The day's number is what shows; a screen reader hears the whole label instead (a name that contains what shows).
      const content = html`<span aria-hidden="true">${Number(date.slice(8))}</span><span class="vh">${sentence(label)}</span>`;
      // A restatement's time in the title follows the page's zone (the script rewrites it).
      const restatedAt = list.find((e) => e.restateCount > 0 && e.lastRestatedAt !== null)?.lastRestatedAt ?? null;
      const titleAt = restatedAt !== null ? html` data-title-t="${restatedAt}"` : "";
      cells.push(href
        ? html`<a class="${cls}" href="${href}" title="${label}"${titleAt} data-date="${date}">${content}</a>`
        : html`<span class="${cls}" title="${label}"${titleAt} data-date="${date}">${content}</span>`);
    }
    const inMonth = entries.filter((e) => e.interval.businessDate.startsWith(month));
    const bad = inMonth.filter((e) => e.status === "missing" || e.status === "failed").length;
    return html`<div class="month"><h3><span>${MONTH_NAMES[Number(month.slice(5)) - 1]} ${month.slice(0, 4)}</span><span class="${bad ? "" : "faint"}">${bad ? `${bad} to look at` : plural(inMonth.length, "interval")}</span></h3>
<div class="cal">${["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map((d) => html`<span class="wd">${d}</span>`)}${cells}</div></div>`;
  });

  const list = attention.length
    ? html`<table class="t"><thead><tr><th>Business date</th><th>Status</th><th>Reason</th><th>Due since</th><th></th></tr></thead><tbody>${attention.map((e) => html`<tr>
<td class="date">${e.interval.businessDate}</td><td>${badge(e.status, undefined, STATUS_WORDS[e.status])}</td>
<td>${e.note ?? (e.runId ? html`<a href="${links.run(e.runId)}">see the run</a>` : "")}</td><td>${at(e.firesAt)}</td>
<td>${e.runId ? html`<a href="${links.run(e.runId)}">open run</a>` : frozenPeriodOf(frozen, e.interval.businessDate) ? html`<span class="muted">frozen</span>` : html`<details><summary>Run it</summary>${actionForm(view, { action: `/ui/pipelines/${p.id}/trigger`, label: "Trigger run", body: html`<input type="hidden" name="date" value="${e.interval.businessDate}">` })}</details>`}</td></tr>`)}</tbody></table>`
    : html`<div class="empty">Every interval due in these months ran or was skipped by policy.</div>`;

  const body = html`${pipelineHeader(view, p, state, "ledger")}
<div class="toolbar"><span class="seg"><a href="${links.ledger(p.id, { month: monthBefore(last, 4) })}">← earlier</a><a href="${links.ledger(p.id, { month: monthBefore(last, -4) })}">later →</a><a href="${links.ledger(p.id)}">now</a></span>
<span class="sp"></span><span class="counts">${SEVERITY.filter((s) => counts.get(s)).map((s) => html`<span class="b s-${s}">${STATUS_WORDS[s]} <b>${counts.get(s)}</b></span>`)}</span></div>
<div class="months">${calendar}</div>
${frozen.length ? html`<p class="muted">Dashed outline: frozen (${frozen.map((f) => `${f.from}..${f.to} by ${f.owner}: ${f.reason}`).join("; ")}).</p>` : ""}
<div class="panel flush"><h2>Missing or failed (${attention.length})</h2>${list}</div>`;
  return page(view, { title: `${p.id} ledger`, active: "pipelines", body });
}

/** The on-call view, idem's home page: across every pipeline, what was due and did not happen, and what is late. */
export async function oncallPage(engine: Engine, view: View): Promise<Html> {
  const pipelines = engine.pipelines();
  const [report, ledgers] = await Promise.all([
    engine.freshness(),
    Promise.all(pipelines.map(async (p) => ({ p, entries: await engine.expected(p.id, { limit: 30 }), state: await engine.pipelineState(p.id) }))),
  ]);
  const incidents = report.openIncidents;
  const unanswered = incidents.filter((i) => i.state === "open").length;
  const problems = ledgers.flatMap(({ p, entries }) => entries.filter((e) => e.status === "missing" || e.status === "failed").map((e) => ({ p, e }))).reverse();
  const shown = problems.slice(0, 50);
  const failures = new Map(await Promise.all(shown.filter(({ e }) => e.status === "failed" && e.runId).map(async ({ e }) => [e.runId!, await failureOf(engine, e.runId!)] as const)));
  const late = report.datasets.filter((d) => d.due && d.due.status !== "on_time");
  const running = ledgers.reduce((n, l) => n + l.entries.filter((e) => e.status === "running" || e.status === "queued").length, 0);
  const missingCount = problems.filter((x) => x.e.status === "missing").length;
  const failedCount = problems.filter((x) => x.e.status === "failed").length;
  const stats = html`<div class="cols3">
<div class="stat"><b>${missingCount}</b>${badge(missingCount ? "missing" : "success", undefined, "missing intervals")}<span> due, no run</span></div>
<div class="stat"><b>${failedCount}</b>${badge(failedCount ? "failed" : "success", undefined, "failed runs")}<span> not cleared yet</span></div>
<div class="stat"><b>${late.length}</b>${badge(late.length ? "late" : "on_time", undefined, "late datasets")}<span> past SLO or deadline</span></div>
<div class="stat"><b>${unanswered}</b>${badge(unanswered ? "failed" : "success", undefined, "open incidents")}${incidents.length > unanswered ? html`<span> ${incidents.length - unanswered} acknowledged</span>` : ""}</div>
<div class="stat"><b>${running}</b>${badge("running", undefined, "runs in flight")}<span> queued or running</span></div>
</div>
<p class="faint">Counted over the last 30 intervals of each pipeline.</p>`;
  const checker = report.checker.status === "ok" ? "" : html`<div class="note bad" role="alert"><b>Checker down.</b> ${sentence(report.checker.message)}</div>`;
  const strips = html`<table class="t"><thead><tr><th>Pipeline</th><th>Last 30 intervals (oldest → newest)</th><th>Missing</th><th>Failed</th></tr></thead><tbody>
${ledgers.map(({ p, entries, state }) => html`<tr><td><a href="${links.ledger(p.id)}"><b>${p.id}</b></a>${state.paused ? html` ${badge("skipped", undefined, "paused")}` : ""}<div class="faint">${p.schedule.describe()}</div></td>
<td><span class="strip">${entries.map((e) => html`<a class="c s-${e.status}" href="${e.runId ? links.run(e.runId) : links.ledger(p.id, { month: e.interval.businessDate.slice(0, 7) })}" title="${e.interval.businessDate}: ${STATUS_WORDS[e.status]}${e.note ? ` (${e.note})` : ""}" aria-label="${e.interval.businessDate}: ${stateLabel(e.status)}"${e.runId ? html` data-rs="${e.runId}"` : ""}></a>`)}</span></td>
<td class="num">${entries.filter((e) => e.status === "missing").length || html`<span class="faint">0</span>`}</td><td class="num">${entries.filter((e) => e.status === "failed").length || html`<span class="faint">0</span>`}</td></tr>`)}
</tbody></table>`;
  const todo = problems.length
    ? html`<table class="t"><thead><tr><th>Pipeline</th><th>Business date</th><th>Status</th><th>Reason</th><th>Due since</th></tr></thead><tbody>${shown.map(({ p, e }) => html`<tr>
<td><a href="${links.ledger(p.id, { month: e.interval.businessDate.slice(0, 7) })}">${p.id}</a></td><td class="date">${e.interval.businessDate}</td><td>${badge(e.status, undefined, STATUS_WORDS[e.status])}</td>
<td>${e.note ?? (e.runId ? failureCell(e.runId, failures.get(e.runId) ?? null) : "")}</td><td>${at(e.firesAt)}</td></tr>`)}</tbody></table>`
    : html`<div class="empty">Nothing missing or failed in the last 30 intervals of any pipeline.</div>`;
  const freshness = late.length
    ? html`<ul class="attention">${late.map((d) => html`<li>${badge(d.due!.status)} <a href="/ui/freshness" class="mono">${d.dataset}</a> for <span class="date">${d.due!.businessDate}</span>, deadline ${at(d.due!.deadlineAt)}${d.owner ? html` · owner ${d.owner}` : ""}</li>`)}</ul>`
    : html`<p class="muted">${report.datasets.length ? "Every promised dataset is on time." : "No freshness promises."}</p>`;
  const body = html`${pageHead({ title: "On call", sub: "What was due and did not happen, what is late, what is open: start here." })}
${checker}${stats}
<div class="cols"><div>
<div class="panel flush"><h2>Needs attention</h2>${todo}</div>
<div class="panel flush"><h2>Ledger of expected runs</h2>${strips}</div>
</div><div>
<div class="panel"><h2>Freshness</h2>${freshness}</div>
<div class="panel" id="incidents"><h2>Open incidents</h2>${incidentsPanel(view, incidents)}</div>
</div></div>`;
  return page(view, { title: "On call", active: "oncall", body });
}

/** The failing task and the first line of its error, each a link (to the task's log, to the run). */
function failureCell(runId: string, failure: Failure | null): Html {
  if (!failure) return html`<a href="${links.run(runId)}">the run failed (no error recorded)</a>`;
  return html`<a class="mono" href="${links.task(runId, failure.taskId, failure.tryNumber)}">${failure.taskId}</a> <span class="err">${failure.errorClass ? `${failure.errorClass}: ` : ""}${failure.line}</span>`;
}

function monthBefore(month: string, n: number): string {
  const [y, m] = month.split("-").map(Number) as [number, number];
  const index = y * 12 + (m - 1) - n;
  return `${Math.floor(index / 12)}-${String((index % 12) + 1).padStart(2, "0")}`;
}

/** " · restated 3 times, last at 2026-11-30 07:10 UTC" for a day whose run the trailing window ran again. */
function restatedWords(list: readonly ExpectedRun[]): string {
  const e = list.find((x) => x.restateCount > 0 || x.restateNote);
  if (!e) return "";
  const last = e.lastRestatedAt !== null ? `, last at ${new Date(e.lastRestatedAt).toISOString().slice(0, 16).replace("T", " ")} UTC` : "";
  return `${e.restateCount > 0 ? ` · restated ${e.restateCount === 1 ? "once" : `${e.restateCount} times`}${last}` : ""}${e.restateNote ? ` · not restated: ${e.restateNote}` : ""}`;
}
