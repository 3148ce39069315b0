import type { Pipeline } from "../../../core/pipeline/types.ts";
import type { PipelineState } from "../../../store/port.ts";
import { html, type Content, type Html } from "../html.ts";
import { actionForm, badge, links, pageHead, plural, type View } from "../parts.ts";

/** The header every pipeline page shares: name, schedule, paused, and the Grid / Graph / Ledger / Versions tabs. */
export function pipelineHeader(view: View, p: Pipeline, state: PipelineState, active: "grid" | "graph" | "ledger" | "versions", right?: Content): Html {
  const tab = (key: typeof active, label: string, href: string) => html`<a href="${href}"${key === active ? html` class="on" aria-current="page"` : ""}>${label}</a>`;
  return html`${pageHead({
    crumbs: [["Pipelines", "/ui/pipelines"], p.id],
    title: html`${p.id} ${state.paused ? badge("skipped", undefined, "paused") : ""}`,
    sub: html`${p.schedule.describe()} · zone ${p.schedule.timezone} · ${plural(p.tasks.size, "task")}${p.owner ? ` · owner ${p.owner}` : ""}${state.paused && state.pausedNote ? ` · paused: ${state.pausedNote}` : ""}`,
    right: html`${right}<details class="menu"><summary class="btn">${state.paused ? "Unpause" : "Pause"}…</summary><div class="panel">${actionForm(view, {
      action: `/ui/pipelines/${p.id}/${state.paused ? "unpause" : "pause"}`,
      label: state.paused ? "Unpause pipeline" : "Pause pipeline",
      danger: !state.paused,
    })}</div></details>`,
  })}
<nav class="tabs">${tab("grid", "Grid", links.grid(p.id))}${tab("graph", "Graph", links.graph(p.id))}${tab("ledger", "Ledger", links.ledger(p.id))}${tab("versions", "Versions", links.versions(p.id))}</nav>`;
}
