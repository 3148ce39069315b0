import type { TaskDefinition } from "../../core/pipeline/types.ts";
import { html, type Html } from "./html.ts";
import { stateLabel } from "./parts.ts";

const NODE_W = 188;
const NODE_H = 62;

export interface DagNodeView {
  task: TaskDefinition;
  state: string;
  href: string | null;
  tryText: string | null;
}

/**
 * The pipeline's DAG laid out by dagre on the server and drawn as SVG: no layout script in the
 * browser. dagre is imported only when a graph page is asked for.
 */
export async function dagSvg(nodes: readonly DagNodeView[], liveRunId: string | null): Promise<Html> {
  const { default: dagre } = await import("@dagrejs/dagre");
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 22, ranksep: 44, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.task.id, { width: NODE_W, height: NODE_H });
  for (const n of nodes) for (const up of n.task.upstream) g.setEdge(up, n.task.id);
  dagre.layout(g);
  const graph = g.graph();
  const width = Math.ceil(graph.width ?? NODE_W);
  const height = Math.ceil(graph.height ?? NODE_H);
  const edges = g.edges().map((e: { v: string; w: string }) => {
    const points: { x: number; y: number }[] = g.edge(e).points ?? [];
    const d = points.map((p, i) => `${i ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
    return html`<path class="edge" d="${d}" marker-end="url(#arrow)"/>`;
  });
  const drawn = nodes.map((n) => {
    const pos = g.node(n.task.id);
    const x = pos.x - NODE_W / 2;
    const y = pos.y - NODE_H / 2;
    const meta = [n.task.kind, n.task.policy.pool ? `⛁ ${n.task.policy.pool}${n.task.policy.slots > 1 ? ` ×${n.task.policy.slots}` : ""}` : null, ...n.task.produces.map((d) => `▤ ${d}`), n.task.publishes ? `✓ publishes ${n.task.publishes}` : null]
      .filter(Boolean)
      .join(" · ");
    const shown = meta.length > 30 ? meta.slice(0, 29) + "…" : meta;
    const box = html`<g class="node s-${n.state}"${liveRunId ? html` data-ti="${liveRunId}/${n.task.id}"` : ""} transform="translate(${x.toFixed(1)},${y.toFixed(1)})">
<title>${n.task.id}: ${stateLabel(n.state)}${meta ? ` (${meta})` : ""}</title>
<rect width="${NODE_W}" height="${NODE_H}" rx="9"/><rect class="band" width="7" height="${NODE_H}" rx="3"/>
<text x="18" y="22">${n.task.id.length > 21 ? n.task.id.slice(0, 20) + "…" : n.task.id}</text>
<text class="st" x="18" y="39">${stateLabel(n.state)}${n.tryText ? ` · ${n.tryText}` : ""}</text>
<text class="meta" x="18" y="54">${shown}</text></g>`;
    return n.href ? html`<a href="${n.href}">${box}</a>` : box;
  });
  return html`<svg class="dag" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="group" aria-label="task graph">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>
${edges}${drawn}</svg>`;
}
