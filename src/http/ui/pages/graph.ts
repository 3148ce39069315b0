import type { Engine } from "../../../engine/engine.ts";
import type { TaskInstanceRecord } from "../../../store/port.ts";
import { html, type Html } from "../html.ts";
import { badge, links, page, stateLabel, type View } from "../parts.ts";
import { instancesLink, mappedCellState, mappedTotal } from "../mapped.ts";
import { dagSvg } from "../dag-svg.ts";
import { pipelineHeader } from "./pipeline-tabs.ts";

/** The DAG coloured by one run's task states (`?run=`, default the newest run); pools and datasets on the nodes. */
export async function graphPage(engine: Engine, view: View, pipelineId: string): Promise<Html> {
  const p = engine.pipeline(pipelineId);
  const [state, recent] = await Promise.all([engine.pipelineState(p.id), engine.runs(p.id, 60)]);
  const runId = view.url.searchParams.get("run") ?? recent[0]?.runId ?? null;
  const run = runId ? await engine.run(runId) : null;
  // One row per task: a mapped task's node takes its instances' most pressing state and opens its keys.
  const tasks = new Map<string, TaskInstanceRecord>(run ? (await engine.taskRows(run.runId)).map((t) => [t.taskId, t]) : []);
  const svg = await dagSvg(
    [...p.tasks.values()].map((task) => {
      const ti = tasks.get(task.id);
      if (run && ti?.mapped) {
        return { task, state: mappedCellState(ti.mapped.states, ti.state), href: instancesLink(run.runId, task.id), tryText: `${mappedTotal(ti.mapped.states).toLocaleString("en")} mapped` };
      }
      return { task, state: ti?.state ?? "none", href: run && ti ? links.task(run.runId, task.id) : null, tryText: ti && ti.tryNumber > 0 ? `try ${ti.tryNumber}/${ti.maxTries}` : null };
    }),
    run?.runId ?? null,
  );
  const options = recent.some((r) => r.runId === runId) || !run ? recent : [run, ...recent];
  const picker = html`<form method="get" class="row">
<label>Coloured by run<select name="run">${options.map((r) => html`<option value="${r.runId}"${r.runId === runId ? " selected" : ""}>${r.businessDate} · ${stateLabel(r.state)}${r.trigger !== "schedule" ? ` · ${r.trigger}` : ""}</option>`)}</select></label>
<button type="submit">Show</button>${run ? html`<a class="btn" href="${links.run(run.runId)}">Open run</a>` : ""}</form>`;
  const pools = [...new Set([...p.tasks.values()].map((t) => t.policy.pool).filter((x): x is string => !!x))];
  const datasets = [...new Set([...p.tasks.values()].flatMap((t) => [...t.produces, ...(t.publishes ? [t.publishes] : [])]))];
  const body = html`${pipelineHeader(view, p, state, "graph")}
<div class="toolbar">${recent.length ? picker : html`<span class="muted">No run yet: the graph shows the definition.</span>`}<span class="sp"></span>
${run ? html`<span>Run ${badge(run.state, { run: run.runId })} <span class="date">${run.businessDate}</span></span>` : ""}</div>
<div class="panel">${svg}</div>
<div class="cols3">
<div class="stat"><b>${p.tasks.size}</b><span>tasks</span></div>
<div class="stat"><b>${pools.length}</b><span>pools: ${pools.join(", ") || "none"}</span></div>
<div class="stat"><b>${datasets.length}</b><span>datasets: ${datasets.join(", ") || "none"}</span></div>
<div class="stat"><b>${p.maxActiveRuns} / ${p.maxActiveTasks}</b><span>max active runs / tasks</span></div>
</div>
<p class="muted">Node legend: ⛁ pool (slots), ▤ dataset it produces, ✓ dataset it publishes (freshness).</p>`;
  return page(view, { title: `${p.id} graph`, active: "pipelines", body });
}
