import type { BackfillPlan, Engine } from "../../../engine/engine.ts";
import type { BackfillProgress } from "../../../store/port.ts";
import { backfillRequestOf } from "../actions.ts";
import { html, seg, type Html } from "../html.ts";
import { actionForm, at, badge, duration, links, page, pageHead, plural, type View } from "../parts.ts";
import { addDays } from "../../../core/time/dates.ts";

const FIELDS = ["pipeline", "from", "to", "reprocess", "tasks", "downstream", "maxActiveRuns", "backwards", "openFrozen"] as const;

/** Every backfill with its progress, and the form that previews a new one. */
export async function backfillsPage(engine: Engine, view: View): Promise<Html> {
  const list = await engine.backfills({ limit: 100 });
  const body = html`${pageHead({ title: "Backfills", sub: "A backfill runs a closed range of business dates, one run per interval, capped. Preview first: nothing is created until you confirm." })}
<div class="panel"><h2>New backfill</h2>${backfillForm(engine, view, {})}</div>
<div class="panel flush"><h2>Backfills (${list.length})</h2>${list.length ? html`<table class="t"><thead><tr><th>Backfill</th><th>Pipeline</th><th>Dates</th><th>State</th><th>Progress</th><th>By</th><th>Why</th><th>Created</th></tr></thead><tbody>
${list.map((b) => html`<tr><td><a class="mono" href="${links.backfill(b.backfillId)}">${b.backfillId}</a></td><td><a href="${links.grid(b.pipelineId)}">${b.pipelineId}</a></td>
<td><span class="date">${b.fromDate}</span> → <span class="date">${b.toDate}</span><div class="faint">reprocess ${b.reprocess}${b.backwards ? ", newest first" : ""}</div></td>
<td>${backfillBadge(b.state)}</td><td>${progressBar(b.progress)}<div class="faint">${progressWords(b.progress)}</div></td><td>${b.actor}</td><td>${b.reason}</td><td>${at(b.createdAt)}</td></tr>`)}</tbody></table>` : html`<div class="empty">No backfill yet.</div>`}</div>`;
  return page(view, { title: "Backfills", active: "backfills", body });
}

/** The plan preview: every date with its action and reason, frozen dates struck out, the cost estimate; then confirm. */
export async function newBackfillPage(engine: Engine, view: View): Promise<Html> {
  const params = Object.fromEntries(FIELDS.map((f) => [f, view.url.searchParams.get(f) ?? undefined])) as Record<(typeof FIELDS)[number], string | undefined>;
  if (!params.pipeline || !params.from || !params.to) {
    const body = html`${pageHead({ crumbs: [["Backfills", "/ui/backfills"], "new"], title: "New backfill" })}<div class="panel">${backfillForm(engine, view, params)}</div>`;
    return page(view, { title: "New backfill", active: "backfills", body });
  }
  const plan = await engine.planBackfill(params.pipeline, backfillRequestOf(params));
  const counts = { create: 0, rerun: 0, leave: 0, refuse: 0 };
  for (const item of plan.items) counts[item.action]++;
  const toRun = counts.create + counts.rerun;
  const e = plan.estimate;
  const rows = plan.items.map((item) => {
    const refused = item.action === "refuse";
    return html`<tr${refused ? html` class="refused"` : ""}><td class="date${refused ? " strike" : ""}">${item.businessDate}</td><td>${badge(item.action, undefined, item.action === "refuse" ? "refused" : item.action)}</td>
<td${refused ? html` class="strike"` : ""}>${item.why}</td><td class="mono faint">${item.runId}</td></tr>`;
  });
  const hidden = FIELDS.filter((f) => params[f]).map((f) => html`<input type="hidden" name="${f}" value="${params[f]}">`);
  const confirm = toRun
    ? actionForm(view, { action: "/ui/backfills", label: `Create backfill: ${plural(toRun, "run")}`, body: hidden })
    : html`<p class="muted">Nothing to run: every date is left or refused.</p>`;
  const body = html`${pageHead({
    crumbs: [["Backfills", "/ui/backfills"], "preview"],
    title: html`Preview: <span class="mono">${plan.pipelineId}</span> <span class="date">${plan.from}</span> → <span class="date">${plan.to}</span>`,
    sub: `reprocess ${plan.reprocess} · ${plan.maxActiveRuns} runs at once${plan.backwards ? " · newest first" : ""}${plan.taskIds ? ` · only ${plan.taskIds.join(", ")}` : ""} · nothing is created until you confirm`,
  })}
<div class="cols3">
<div class="stat"><b>${counts.create}</b><span>${badge("create")} new runs</span></div>
<div class="stat"><b>${counts.rerun}</b><span>${badge("rerun")} runs again</span></div>
<div class="stat"><b>${counts.leave}</b><span>${badge("leave")} left as they are</span></div>
<div class="stat"><b>${counts.refuse}</b><span>${badge("refuse", undefined, "refused")} refused (frozen, not owned, active)</span></div>
<div class="stat"><b>${e.p50Ms === null ? "?" : duration(e.p50Ms)}</b><span>estimate p50 (p90 ${e.p90Ms === null ? "?" : duration(e.p90Ms)})</span></div>
</div>
<div class="cols"><div class="panel flush"><h2>Every date (${plan.items.length})</h2><table class="t"><thead><tr><th>Business date</th><th>Action</th><th>Reason</th><th>Run</th></tr></thead><tbody>${rows}</tbody></table></div>
<div><div class="panel"><h2>Cost estimate</h2><p>${e.basis}.</p>${e.tasksWithoutHistory.length ? html`<p class="muted">No history yet for ${e.tasksWithoutHistory.join(", ")} (counted as zero).</p>` : ""}</div>
${mappedWorkPanel(plan.mapped)}
<div class="panel"><h2>Confirm</h2>${confirm}</div>
<div class="panel"><h2>Change the plan</h2>${backfillForm(engine, view, params)}</div></div></div>`;
  return page(view, { title: "Backfill preview", active: "backfills", body });
}

/** Each mapped task's expected instances, from the item counts of its last completed runs: labelled an estimate. */
function mappedWorkPanel(m: BackfillPlan["mapped"]): Html | string {
  if (m.tasks.length === 0) return "";
  const n = (count: number | null) => (count === null ? "?" : count.toLocaleString("en-US"));
  const rows = m.tasks.map((t) => html`<tr><td class="mono">${t.taskId}</td><td>${t.perDate === null ? "no completed run" : `~${n(t.perDate)}`}</td><td>${n(t.last)}</td><td>${t.runsSeen}</td><td>${t.instances === null ? "?" : `~${n(t.instances)}`}</td></tr>`);
  return html`<div class="panel flush" id="mapped-work"><h2>Mapped work (estimate)</h2><p class="muted">${m.basis}.</p>
<table class="t"><thead><tr><th>Mapped task</th><th>Per date</th><th>Last</th><th>Runs seen</th><th>Instances</th></tr></thead><tbody>${rows}
<tr><td>total</td><td></td><td></td><td></td><td>~${n(m.instances)}</td></tr></tbody></table></div>`;
}

/** One backfill: its progress per date, and pause, resume, cancel. */
export async function backfillPage(engine: Engine, view: View, backfillId: string): Promise<Html> {
  const b = await engine.backfillStatus(backfillId);
  const items = await engine.backfillItems(backfillId);
  const dated = items.filter((i) => i.action === "create" || i.action === "rerun");
  const ledger = dated.length ? await engine.expected(b.pipelineId, { from: b.fromDate, to: addDays(b.toDate, 1) }) : [];
  const stateOf = new Map(ledger.map((e) => [e.runId, e.status]));
  const live = b.state === "running" || b.state === "paused";
  const controls = live
    ? html`<div class="actions">${b.state === "running" ? actionForm(view, { action: `/ui/backfills/${seg(backfillId)}/pause`, label: "Pause" }) : actionForm(view, { action: `/ui/backfills/${seg(backfillId)}/resume`, label: "Resume" })}
${actionForm(view, { action: `/ui/backfills/${seg(backfillId)}/cancel`, label: "Cancel backfill", danger: true })}</div>`
    : html`<p class="muted">The backfill is ${b.state}: nothing left to control.</p>`;
  const rows = items.map((item) => {
    const runState = item.action === "create" || item.action === "rerun" ? (item.started ? (stateOf.get(item.runId) ?? "queued") : null) : null;
    return html`<tr><td class="date${item.action === "refuse" ? " strike" : ""}">${item.businessDate}</td><td>${badge(item.action, undefined, item.action === "refuse" ? "refused" : item.action)}</td>
<td>${runState ? html`<a href="${links.run(item.runId)}">${badge(runState, { run: item.runId })}</a>` : item.action === "create" || item.action === "rerun" ? html`<span class="muted">not started</span>` : ""}</td><td class="${item.action === "refuse" ? "strike" : "muted"}">${item.why}</td></tr>`;
  });
  const body = html`${pageHead({
    crumbs: [["Backfills", "/ui/backfills"], backfillId],
    title: html`<span class="mono">${backfillId}</span> ${backfillBadge(b.state)}`,
    sub: html`<a href="${links.grid(b.pipelineId)}">${b.pipelineId}</a> · <span class="date">${b.fromDate}</span> → <span class="date">${b.toDate}</span> · reprocess ${b.reprocess} · ${b.maxActiveRuns} at once · by ${b.actor}: ${b.reason}`,
  })}
<div class="cols"><div>
<div class="panel"><h2>Progress</h2>${progressBar(b.progress)}<p class="muted">${progressWords(b.progress)}</p></div>
<div class="panel flush"><h2>Per date (${items.length})</h2><table class="t"><thead><tr><th>Business date</th><th>Plan</th><th>Run</th><th>Reason</th></tr></thead><tbody>${rows}</tbody></table></div>
</div><div>
<div class="panel"><h2>Control</h2>${controls}</div>
<div class="panel"><h2>Backfill</h2><dl class="kv"><dt>Created</dt><dd>${at(b.createdAt)}</dd><dt>Updated</dt><dd>${at(b.updatedAt)}</dd><dt>Ended</dt><dd>${at(b.endedAt)}</dd>
<dt>Tasks</dt><dd>${b.taskIds ? b.taskIds.join(", ") : "all"}</dd><dt>Graph version</dt><dd><code>${b.graphVersion.slice(0, 12)}</code></dd></dl></div>
</div></div>`;
  return page(view, { title: backfillId, active: "backfills", body });
}

function backfillForm(engine: Engine, view: View, values: Partial<Record<(typeof FIELDS)[number], string>>): Html {
  const pipelines = engine.pipelines().filter((p) => p.schedule.kind !== "manual");
  return html`<form method="get" action="/ui/backfills/new" class="row">
<label>Pipeline<select name="pipeline" required>${pipelines.map((p) => html`<option value="${p.id}"${values.pipeline === p.id ? " selected" : ""}>${p.id}</option>`)}</select></label>
<label>From (business date)<input name="from" type="date" required value="${values.from ?? ""}"></label>
<label>To (inclusive)<input name="to" type="date" required value="${values.to ?? ""}"></label>
<label>Reprocess<select name="reprocess">${["none", "failed", "all"].map((r) => html`<option value="${r}"${(values.reprocess ?? "none") === r ? " selected" : ""}>${r === "none" ? "none: only missing dates" : r === "failed" ? "failed: missing and failed" : "all: every date"}</option>`)}</select></label>
<label>Runs at once<input name="maxActiveRuns" type="number" min="1" value="${values.maxActiveRuns ?? "4"}"></label>
<label>Only tasks (regex)<input name="tasks" value="${values.tasks ?? ""}" placeholder="all tasks"></label>
<label class="check"><input type="checkbox" name="downstream" value="1"${values.downstream === "1" ? " checked" : ""}> and downstream</label>
<label class="check"><input type="checkbox" name="backwards" value="1"${values.backwards === "1" ? " checked" : ""}> newest first</label>
<button type="submit" class="primary">Preview plan</button>
</form>${view.principal?.mayAct ? "" : html`<p class="muted">You may preview; creating needs an operator.</p>`}`;
}

function backfillBadge(state: string): Html {
  const shown: Record<string, string> = { running: "running", paused: "up_for_reschedule", completed: "success", failed: "failed", cancelled: "skipped" };
  return badge(shown[state] ?? state, undefined, state);
}

function progressBar(p: BackfillProgress): Html {
  const total = Math.max(1, p.planned);
  const parts: [string, number][] = [["success", p.succeeded], ["failed", p.failed], ["running", p.running], ["queued", p.queued]];
  let x = 0;
  const rects = parts.map(([state, n]) => {
    const w = (n / total) * 100;
    const r = html`<rect class="bar s-${state}" x="${x.toFixed(2)}" y="0" width="${w.toFixed(2)}" height="8"/>`;
    x += w;
    return r;
  });
  return html`<svg class="progress" viewBox="0 0 100 8" preserveAspectRatio="none" role="img" aria-label="${progressWords(p)}"><rect class="track" width="100" height="8" rx="4"/>${rects}</svg>`;
}

function progressWords(p: BackfillProgress): string {
  return `${p.succeeded} succeeded, ${p.failed} failed, ${p.running} running, ${p.queued} queued, ${p.notStarted} not started of ${plural(p.planned, "run")}${p.untouched ? `; ${p.untouched} dates left or refused` : ""}`;
}
