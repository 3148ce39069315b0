import { NotFoundError, UsageError } from "../../../core/model/errors.ts";
import { TASK_STATES, type TaskState } from "../../../core/model/states.ts";
import type { Engine } from "../../../engine/engine.ts";
import { html, type Html } from "../html.ts";
import { instancesLink, MAPPED_STATE_ORDER, mappedCounts, mappedSummary, mappedTotal } from "../mapped.ts";
import { at, badge, links, page, pageHead, plural, stateLabel, took, type View } from "../parts.ts";

/** Keys a page lists: a page is one keyset read, whatever the number of instances. */
export const INSTANCES_PAGE = 100;

/**
 * One mapped task of one run, by key: its instances counted by state (one row read), then one
 * page of keys in key order with a filter by key prefix and by state. The next page is a link
 * naming the last key shown (keyset, never an offset), and every filter is in the URL, so the
 * page works with plain links and a GET form.
 */
export async function instancesPage(engine: Engine, view: View, runId: string, taskId: string): Promise<Html> {
  const params = view.url.searchParams;
  const prefix = params.get("prefix") ?? "";
  const stateParam = params.get("state") || null;
  if (stateParam !== null && !(TASK_STATES as readonly string[]).includes(stateParam)) {
    throw new UsageError(`state=${stateParam}: expected one of ${TASK_STATES.join(", ")}`);
  }
  const state = stateParam as TaskState | null;
  const after = params.get("after") ?? undefined;
  const [run, rows] = await Promise.all([engine.run(runId), engine.taskRows(runId)]);
  const task = rows.find((t) => t.taskId === taskId);
  if (!task) throw new NotFoundError("task", `run ${runId} has no task "${taskId}" (tasks: ${rows.map((t) => t.taskId).join(", ")})`);
  const instances = await engine.mappedInstances(runId, taskId, { after, keyPrefix: prefix || undefined, states: state ? [state] : undefined, limit: INSTANCES_PAGE });
  const now = engine.clock.now();
  const filter = { prefix: prefix || null, state };
  const counts = task.mapped?.states ?? null;

  const table = instances.items.length
    ? html`<table class="t instances"><thead><tr><th>Key</th><th>State</th><th>Try</th><th>Started</th><th>Took</th><th>See</th></tr></thead><tbody>
${instances.items.map((i) => {
    const link = links.task(runId, i.taskId);
    return html`<tr><td class="key mono"><a href="${link}">${i.key}</a></td><td>${badge(i.state, { ti: `${runId}/${i.taskId}` })}${i.reason ? html`<div class="muted">${i.reason}</div>` : ""}</td>
<td class="num">${i.tryNumber}</td><td>${at(i.startedAt)}</td><td class="num">${took(i.startedAt, i.endedAt, now)}</td>
<td>${i.tryNumber > 0 ? html`<a href="${link}#log">log</a> · ` : ""}<a href="${link}#why">why</a></td></tr>`;
  })}</tbody></table>`
    : html`<div class="empty">${after || prefix || state ? "No key matches on this page of the filter." : counts ? "No instance." : "Not expanded yet: the mapped task has not found its list."}</div>`;

  const pager = html`<nav class="pager" aria-label="pages of keys">
${after ? html`<a class="btn" href="${instancesLink(runId, taskId, filter)}">← first page</a>` : ""}
<span class="muted">${instances.items.length ? html`keys <span class="mono">${instances.items[0]!.key}</span> to <span class="mono">${instances.items.at(-1)!.key}</span>` : ""}</span>
${instances.next !== null ? html`<a class="btn" rel="next" href="${instancesLink(runId, taskId, { ...filter, after: instances.next })}">next ${INSTANCES_PAGE} keys →</a>` : ""}
</nav>`;

  const form = html`<form method="get" action="${instancesLink(runId, taskId)}" class="row" role="search" data-zoned>
<label>Key starts with<input name="prefix" value="${prefix}" placeholder="e.g. 2026-09-" autocomplete="off"></label>
<label>State<select name="state"><option value="">any</option>${MAPPED_STATE_ORDER.map((s) => html`<option value="${s}"${s === state ? " selected" : ""}>${stateLabel(s)}${counts ? ` (${counts[s].toLocaleString("en")})` : ""}</option>`)}</select></label>
<button type="submit" class="primary">Filter</button>${prefix || state ? html`<a class="btn" href="${instancesLink(runId, taskId)}">Clear filter</a>` : ""}
</form>`;

  const body = html`${pageHead({
    crumbs: [["Pipelines", "/ui/pipelines"], [run.pipelineId, links.grid(run.pipelineId)], [runId, links.run(runId)], [taskId, links.task(runId, taskId)], "instances"],
    title: html`<span class="mono">${taskId}</span> ${badge(task.state, { ti: `${runId}/${taskId}` })}`,
    sub: html`business date <span class="date">${run.businessDate}</span> · ${counts ? mappedSummary(counts) : "no list found yet"}`,
  })}
<div class="panel"><h2>By state</h2>${counts && mappedTotal(counts) > 0
    ? html`<p>${mappedCounts(counts, (s) => instancesLink(runId, taskId, { prefix: prefix || null, state: s }), state)}</p>
<p class="muted">Counted on the mapped task's own row as each instance changes state; a rerun's removed keys are kept, with their history.</p>`
    : html`<p class="muted">${task.mapped ? "The list was empty." : "The mapped task has not expanded its list in this try."}</p>`}
${form}</div>
<div class="panel flush"><h2>${state || prefix ? html`Keys${prefix ? html` starting with <span class="mono">${prefix}</span>` : ""}${state ? html` in state ${stateLabel(state)}` : ""}` : "Keys"}${after ? html` after <span class="mono">${after}</span>` : ""}</h2>
${table}${pager}</div>
<p class="muted">${plural(instances.items.length, "key")} on this page, in key order; the next page starts after the last key shown.</p>`;
  return page(view, { title: `${taskId} instances · ${runId}`, active: "pipelines", body });
}
