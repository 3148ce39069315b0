import type { Pipeline } from "../../../core/pipeline/types.ts";
import type { PipelineState } from "../../../store/port.ts";
import { html, type Content, type Html } from "../html.ts";
import { badge, links, pageHead, plural } from "../parts.ts";

/** The header every pipeline page shares: name, schedule, paused, and the Grid / Graph / Ledger tabs. */
export function pipelineHeader(p: Pipeline, state: PipelineState, active: "grid" | "graph" | "ledger", right?: Content): Html {
  const tab = (key: typeof active, label: string, href: string) => html`<a href="${href}"${key === active ? html` class="on" aria-current="page"` : ""}>${label}</a>`;
  return html`${pageHead({
    crumbs: [["Pipelines", "/ui/pipelines"], p.id],
    title: html`${p.id} ${state.paused ? badge("skipped", undefined, "paused") : ""}`,
    sub: html`${p.schedule.describe()} · zone ${p.schedule.timezone} · ${plural(p.tasks.size, "task")}${p.owner ? ` · owner ${p.owner}` : ""}${state.paused && state.pausedNote ? ` · paused: ${state.pausedNote}` : ""}`,
    right,
  })}
<nav class="tabs">${tab("grid", "Grid", links.grid(p.id))}${tab("graph", "Graph", links.graph(p.id))}${tab("ledger", "Ledger", links.ledger(p.id))}</nav>`;
}
