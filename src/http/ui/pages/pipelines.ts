import type { Engine } from "../../../engine/engine.ts";
import { html, type Html } from "../html.ts";
import { at, badge, empty, links, page, pageHead, plural, stateLabel, type View } from "../parts.ts";

/** Every pipeline: schedule in its zone, paused or not, the last business dates as cells, freshness, next run. */
export async function pipelinesPage(engine: Engine, view: View): Promise<Html> {
  const pipelines = engine.pipelines();
  const report = await engine.freshness();
  const rows = await Promise.all(
    pipelines.map(async (p) => {
      const [state, recent] = await Promise.all([engine.pipelineState(p.id), engine.expected(p.id, { limit: 14 })]);
      const next = engine.preview(p.id, 1)[0] ?? null;
      const promised = report.datasets.filter((d) => d.pipelineId === p.id);
      return { p, state, recent, next, promised };
    }),
  );
  const body = html`${pageHead({ title: "Pipelines", sub: plural(pipelines.length, "pipeline") + " loaded from the project" })}
<div class="panel flush">
${pipelines.length === 0 ? empty("No pipelines: add one under pipelines/ and run idem validate.") : html`<table class="t">
<thead><tr><th>Pipeline</th><th>Schedule</th><th>State</th><th>Last 14 intervals (oldest → newest)</th><th>Freshness</th><th>Next run</th></tr></thead>
<tbody>${rows.map(({ p, state, recent, next, promised }) => html`<tr>
<td><a href="${links.grid(p.id)}"><b>${p.id}</b></a>${p.description ? html`<div class="muted">${p.description}</div>` : ""}
<div class="faint">${plural(p.tasks.size, "task")}${p.owner ? ` · owner ${p.owner}` : ""}${p.tags.length ? ` · ${p.tags.join(", ")}` : ""}</div></td>
<td>${p.schedule.describe()}<div class="faint">zone ${p.schedule.timezone}</div></td>
<td>${state.paused ? html`${badge("skipped", undefined, "paused")}<div class="faint">${state.pausedBy ? `by ${state.pausedBy}` : ""}${state.pausedNote ? `: ${state.pausedNote}` : ""}</div>` : badge("success", undefined, "active")}</td>
<td><span class="strip">${recent.map((e) =>
        e.runId
          ? html`<a class="c s-${e.status}" href="${links.run(e.runId)}" data-rs="${e.runId}" title="${e.interval.businessDate}: ${stateLabel(e.status)}" aria-label="${e.interval.businessDate}: ${stateLabel(e.status)}"></a>`
          : html`<a class="c s-${e.status}" href="${links.ledger(p.id, { month: e.interval.businessDate.slice(0, 7) })}" title="${e.interval.businessDate}: ${stateLabel(e.status)}${e.note ? ` (${e.note})` : ""}" aria-label="${e.interval.businessDate}: ${stateLabel(e.status)}"></a>`,
      )}</span>${recent.length ? html`<div class="faint">${recent[0]!.interval.businessDate} → ${recent.at(-1)!.interval.businessDate}</div>` : html`<span class="faint">no intervals due yet</span>`}</td>
<td>${promised.length === 0 ? html`<span class="faint">no promise</span>` : promised.map((d) => html`<div>${d.due ? badge(d.due.status) : badge("not_yet_due")} <span class="mono">${d.dataset}</span></div>`)}</td>
<td>${next ? html`<span class="date">${next.interval.businessDate}</span><div class="faint">fires ${at(next.firesAt)}</div>` : html`<span class="faint">none ahead</span>`}</td>
</tr>`)}</tbody></table>`}
</div>`;
  return page(view, { title: "Pipelines", active: "pipelines", body });
}
