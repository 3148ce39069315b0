import type { Engine } from "../../../engine/engine.ts";
import { html, query, seg, type Html } from "../html.ts";
import { sentence } from "../sentence.ts";
import { actionForm, at, badge, duration, links, page, pageHead, plural, type View } from "../parts.ts";

/** Pools: slots, who holds them, and a resize form. */
export async function poolsPage(engine: Engine, view: View): Promise<Html> {
  const pools = await engine.pools();
  const users = new Map<string, string[]>();
  for (const p of engine.pipelines()) for (const t of p.tasks.values()) if (t.policy.pool) users.set(t.policy.pool, [...(users.get(t.policy.pool) ?? []), `${p.id}.${t.id}`]);
  const body = html`${pageHead({ title: "Pools", sub: "A pool is a number of slots guarding a shared resource; a task takes N of them while it runs." })}
<div class="panel flush">${pools.length ? html`<table class="t"><thead><tr><th>Pool</th><th>Used</th><th>Held by</th><th>Tasks that use it</th><th>Resize</th></tr></thead><tbody>
${pools.map((p) => html`<tr><td><b class="mono">${p.name}</b>${p.description ? html`<div class="muted">${p.description}</div>` : ""}</td>
<td><b>${p.used}</b> / ${p.slots}${p.used >= p.slots && p.slots > 0 ? html` ${badge("up_for_retry", undefined, "full")}` : ""}</td>
<td>${p.holders.length ? p.holders.map((h) => html`<div><a href="${links.task(h.runId, h.taskId)}" class="mono">${h.runId} ${h.taskId}</a> <span class="faint">×${h.slots}${h.workerId ? ` on ${h.workerId}` : h.remote ? " by its remote job" : ""}</span></div>`) : html`<span class="faint">free</span>`}</td>
<td class="mono">${(users.get(p.name) ?? []).join(", ") || html`<span class="faint">none</span>`}</td>
<td>${actionForm(view, { action: `/ui/pools/${seg(p.name)}`, label: "Set slots", cls: "inline", body: html`<input name="slots" type="number" min="0" value="${p.slots}" aria-label="slots of ${p.name}">` })}</td></tr>`)}
</tbody></table>` : html`<div class="empty">No pool. Tasks name one with <code>pool</code>; idem creates it on first use.</div>`}</div>`;
  return page(view, { title: "Pools", active: "pools", body });
}

/** Workers and the scheduler's leadership. */
export async function workersPage(engine: Engine, view: View): Promise<Html> {
  const [workers, lead] = await Promise.all([engine.workers(), engine.leadership()]);
  const now = engine.clock.now();
  const body = html`${pageHead({ title: "Workers", sub: "Processes that claim task instances, and the scheduler that creates runs." })}
<div class="panel"><h2>Scheduler</h2>${lead
    ? html`<dl class="kv"><dt>Leader</dt><dd class="mono">${lead.holder}</dd><dt>State</dt><dd>${lead.current ? badge("success", undefined, "leading") : badge("failed", undefined, "lease expired")}</dd>
<dt>Term</dt><dd>${lead.term}</dd><dt>Heartbeat</dt><dd>${at(lead.renewedAt, true)} (${duration(now - lead.renewedAt)} ago)</dd><dt>Lease until</dt><dd>${at(lead.expiresAt, true)}</dd></dl>`
    : html`<p>No scheduler has ever run against this store: start <code>idem scheduler</code> (or <code>idem dev</code>).</p>`}</div>
<div class="panel flush"><h2>Workers (${workers.length})</h2>${workers.length ? html`<table class="t"><thead><tr><th>Worker</th><th>Host</th><th>PID</th><th>Slots</th><th>Started</th><th>Last seen</th><th>State</th></tr></thead><tbody>
${workers.map((w) => html`<tr><td class="mono">${w.workerId}</td><td>${w.host}</td><td class="num">${w.pid}</td><td class="num">${w.concurrency}</td><td>${at(w.startedAt)}</td><td>${at(w.lastSeen, true)} <span class="faint">(${duration(now - w.lastSeen)} ago)</span></td>
<td>${w.alive ? badge("success", undefined, "alive") : badge("failed", undefined, "not seen")}</td></tr>`)}</tbody></table>` : html`<div class="empty">No worker. Start <code>idem worker</code> (or <code>idem dev</code>).</div>`}</div>`;
  return page(view, { title: "Workers", active: "workers", body });
}

/** Health: the engine's verdict on the installation (as GET /health answers), then each part: scheduler, workers, checker, incidents, pipelines. */
export async function healthPage(engine: Engine, view: View): Promise<Html> {
  const [health, workers, report] = await Promise.all([engine.installationHealth(), engine.workers(), engine.freshness()]);
  const now = engine.clock.now();
  const alive = workers.filter((w) => w.alive);
  const scheduler = health.checker?.scheduler;
  const broken = health.brokenFiles.length;
  const checks: [string, boolean, string][] = [
    ["Installation", health.healthy, health.message],
    ["Scheduler", !!scheduler?.live, scheduler ? scheduler.note : "the state store cannot be read"],
    ["Workers", alive.length > 0, `${plural(alive.length, "worker")} alive of ${workers.length} known`],
    ["Freshness checker", health.checker?.status === "ok", health.checker?.message ?? "the state store cannot be read"],
    ["Incidents", !report.openIncidents.some((i) => i.state === "open"), incidentCounts(report.openIncidents)],
    ["Pipelines", broken === 0, `${plural(engine.pipelines().length, "pipeline")} loaded${broken ? `; ${plural(broken, "pipeline file")} did not load` : ""}`],
  ];
  const body = html`${pageHead({ title: "Health", sub: html`As of ${at(now, true)}` })}
<div class="panel flush"><table class="t"><thead><tr><th>Check</th><th>Status</th><th>Detail</th></tr></thead><tbody>
${checks.map(([name, ok, detail]) => html`<tr><td><b>${name}</b></td><td>${ok ? badge("success", undefined, "ok") : badge("failed", undefined, "attention")}</td><td>${sentence(detail)}</td></tr>`)}
</tbody></table></div>`;
  return page(view, { title: "Health", active: "health", body });
}

/** Datasets: what produces and publishes each one, and its latest events. */
export async function datasetsPage(engine: Engine, view: View): Promise<Html> {
  const chosen = view.url.searchParams.get("dataset") ?? undefined;
  const { items: events } = await engine.datasetEventsPage({ dataset: chosen, limit: 200 });
  const known = engine.datasets();
  const tasks = (list: { pipelineId: string; taskId: string }[]) => list.map((t) => `${t.pipelineId}.${t.taskId}`).join(", ") || "–";
  const body = html`${pageHead({ title: "Datasets", sub: "Named outputs: who produces them, who publishes their freshness, which pipelines wait on them." })}
<div class="panel flush"><table class="t"><thead><tr><th>Dataset</th><th>Produced by</th><th>Published by</th><th>Triggers</th><th>Freshness promised by</th></tr></thead><tbody>
${known.map((d) => html`<tr><td><a class="mono" href="/ui/datasets${query({ dataset: d.name })}">${d.name}</a></td><td class="mono">${tasks(d.producedBy)}</td><td class="mono">${tasks(d.publishedBy)}</td><td class="mono">${d.triggers.join(", ") || "–"}</td><td class="mono">${d.promisedBy.length ? html`<a href="/ui/freshness">${d.promisedBy.join(", ")}</a>` : "–"}</td></tr>`)}
</tbody></table>${known.length ? "" : html`<div class="empty">No task declares <code>produces</code> or <code>publishes</code>.</div>`}</div>
<div class="panel flush"><h2>${chosen ? html`Events of <span class="mono">${chosen}</span> <a class="muted" href="/ui/datasets">(all)</a>` : "Latest events"}</h2>${events.length ? html`<table class="t"><thead><tr><th>At</th><th>Dataset</th><th>Business date</th><th>From</th><th>Detail</th></tr></thead><tbody>
${events.map((e) => html`<tr><td>${at(e.at)}</td><td class="mono">${e.dataset}</td><td class="date">${e.businessDate}</td>${e.source === "run"
  ? html`<td><a class="mono" href="${links.run(e.runId)}">${e.runId}</a></td><td><span class="mono">${e.taskId}</span> (${e.trigger})</td>`
  : html`<td>${e.source}, by <span class="mono">${e.actor}</span></td><td>key <span class="mono">${e.idempotencyKey}</span></td>`}</tr>`)}</tbody></table>` : html`<div class="empty">No dataset event yet.</div>`}</div>`;
  return page(view, { title: "Datasets", active: "datasets", body });
}

/** "2 incidents open, 1 acknowledged": acknowledged ones are someone's already. */
function incidentCounts(incidents: readonly { state: string }[]): string {
  const open = incidents.filter((i) => i.state === "open").length;
  const acknowledged = incidents.length - open;
  if (incidents.length === 0) return "none open";
  return `${plural(open, "incident")} open${acknowledged ? `, ${acknowledged} acknowledged` : ""}`;
}
