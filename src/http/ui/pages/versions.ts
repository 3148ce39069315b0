import { UsageError } from "../../../core/model/errors.ts";
import type { GraphDiff } from "../../../core/pipeline/graph-diff.ts";
import type { Engine } from "../../../engine/engine.ts";
import type { CodeVersionUse, RunRecord } from "../../../store/port.ts";
import { html, type Html } from "../html.ts";
import { at, badge, links, page, pageHead, plural, type View } from "../parts.ts";
import { pipelineHeader } from "./pipeline-tabs.ts";

/** Runs shown under each version of the timeline; the version's own page lists them all. */
const RUNS_PER_VERSION = 8;
const RUNS_PER_PAGE = 100;

/**
 * A pipeline's code versions, newest first (docs/versions.md): when each was recorded and by whom,
 * when it first ran, the runs pinned to it, and a diff between any two.
 */
export async function versionsPage(engine: Engine, view: View, pipelineId: string): Promise<Html> {
  const p = engine.pipeline(pipelineId);
  const [state, oldestFirst] = await Promise.all([engine.pipelineState(p.id), engine.codeVersions(p.id)]);
  const versions = [...oldestFirst].reverse();
  const latest = engine.latestCodeVersion(p.id);
  const recent = await Promise.all(versions.map((v) => v.runs === 0 ? [] : engine.runsPage(p.id, { codeVersion: v.codeVersion, limit: RUNS_PER_VERSION }).then((page) => page.items)));
  const rows = versions.map((v, i) => {
    const older = versions[i + 1];
    return html`<tr id="v-${v.codeVersion}"><td><a class="mono" href="${links.version(p.id, v.codeVersion)}">${v.codeVersion}</a>${v.codeVersion === latest ? html` <span class="pill" title="what a new run is pinned to">latest</span>` : ""}${v.collectedAt !== null ? html` <span class="pill" title="its bundle was removed; its runs and record stay">collected</span>` : ""}</td>
<td>${at(v.createdAt)}<div class="muted">${v.createdBy ?? "unknown"}</div></td>
<td>${v.firstRanAt === null ? html`<span class="faint">never</span>` : at(v.firstRanAt)}</td>
<td>${runsCell(p.id, v, recent[i]!)}</td>
<td>${older ? html`<a href="${links.versionDiff(p.id, older.codeVersion, v.codeVersion)}">diff with ${older.codeVersion.slice(0, 8)}</a>` : html`<span class="faint">the first</span>`}</td></tr>`;
  });
  const picker = (name: "from" | "to", chosen: string | undefined) =>
    html`<label>${name === "from" ? "From" : "To"}<select name="${name}">${versions.map((v) => html`<option value="${v.codeVersion}"${v.codeVersion === chosen ? " selected" : ""}>${v.codeVersion.slice(0, 12)} · ${new Date(v.createdAt).toISOString().slice(0, 10)}</option>`)}</select></label>`;
  const diffForm = versions.length > 1
    ? html`<form method="get" action="${links.versionDiff(p.id)}" class="row">${picker("from", versions[1]!.codeVersion)}${picker("to", versions[0]!.codeVersion)}<button type="submit">Compare</button></form>`
    : html`<p class="muted">One version so far: nothing to compare.</p>`;
  const body = html`${pipelineHeader(view, p, state, "versions")}
<p class="muted">Each run keeps the code version it was created with: its retries, clears and recoveries run that code (<code>idem versions ${p.id}</code>).
${latest ? html`New runs take <code>${latest}</code>.` : html`This pipeline's file could not be bundled: its runs name no code version.`}</p>
<div class="panel"><h2>Compare two versions</h2>${diffForm}</div>
<div class="panel flush"><h2>Versions, newest first</h2>${versions.length === 0
    ? html`<p class="muted pad">No code version recorded yet.</p>`
    : html`<table class="t"><thead><tr><th>Version</th><th>Recorded, by</th><th>First ran</th><th>Runs pinned to it</th><th>Diff</th></tr></thead><tbody>${rows}</tbody></table>`}</div>`;
  return page(view, { title: `${p.id} versions`, active: "pipelines", body });
}

function runsCell(pipelineId: string, v: CodeVersionUse, runs: readonly RunRecord[]): Html {
  if (v.runs === 0) return html`<span class="faint">none</span>`;
  const dates = v.firstDate === v.lastDate ? v.firstDate : `${v.firstDate}..${v.lastDate}`;
  return html`<div>${plural(v.runs, "run")} · <span class="date">${dates}</span></div>
<div class="runlist">${runs.map((r) => html`<a href="${links.run(r.runId)}">${badge(r.state, { run: r.runId }, r.businessDate)}</a> `)}${v.runs > runs.length ? html`<a href="${links.version(pipelineId, v.codeVersion)}">all ${v.runs}</a>` : ""}</div>`;
}

/** One code version: where it came from, its packages, and every run pinned to it, a page at a time. */
export async function versionPage(engine: Engine, view: View, pipelineId: string, given: string): Promise<Html> {
  const p = engine.pipeline(pipelineId);
  const v = await engine.codeVersion(p.id, given);
  const before = view.url.searchParams.get("before");
  const after = before === null ? undefined : Number(before);
  if (after !== undefined && !Number.isFinite(after)) throw new UsageError(`before ${JSON.stringify(before)}: expected the interval start of the last run of the previous page`);
  const runs = await engine.runsPage(p.id, { codeVersion: v.codeVersion, limit: RUNS_PER_PAGE, after });
  const latest = engine.latestCodeVersion(p.id);
  const facts = html`<dl class="kv">
<dt>Recorded</dt><dd>${at(v.createdAt, true)} by ${v.createdBy ?? html`<span class="faint">unknown</span>`}</dd>
<dt>First ran</dt><dd>${v.firstRanAt === null ? html`<span class="faint">never</span>` : at(v.firstRanAt, true)}</dd>
<dt>File</dt><dd><code>${v.file}</code></dd>
<dt>Graph version</dt><dd><code>${v.graphVersion.slice(0, 12)}</code></dd>
<dt>Packages</dt><dd>${Object.keys(v.packages).length ? Object.entries(v.packages).map(([name, version]) => html`<code>${name}@${version}</code> `) : html`<span class="faint">none</span>`}</dd>
<dt>Bundle</dt><dd>${v.collectedAt === null ? html`<code>${v.location}/${v.codeVersion}.mjs</code>` : html`collected at ${at(v.collectedAt, true)}: its sources are gone`}</dd>
</dl>`;
  const table = html`<table class="t"><thead><tr><th>Business date</th><th>State</th><th>Trigger</th><th>Created</th></tr></thead><tbody>
${runs.items.map((r) => html`<tr><td><a class="date" href="${links.run(r.runId)}">${r.businessDate}</a></td><td>${badge(r.state, { run: r.runId })}</td><td>${r.trigger}</td><td>${at(r.createdAt)}</td></tr>`)}</tbody></table>`;
  const more = runs.next === null ? "" : html`<p><a href="${links.version(p.id, v.codeVersion, runs.next)}">Older runs</a></p>`;
  const body = html`${pageHead({
    crumbs: [["Pipelines", "/ui/pipelines"], [p.id, links.grid(p.id)], ["versions", links.versions(p.id)], "version"],
    title: html`<span class="mono">${v.codeVersion}</span>${v.codeVersion === latest ? html` <span class="pill">latest</span>` : ""}`,
    sub: html`code version of ${p.id} · ${plural(v.runs, "run")} pinned to it${v.firstDate ? html` · <span class="date">${v.firstDate === v.lastDate ? v.firstDate : `${v.firstDate}..${v.lastDate}`}</span>` : ""}`,
    right: latest && latest !== v.codeVersion && v.collectedAt === null ? html`<a class="btn" href="${links.versionDiff(p.id, v.codeVersion, latest)}">Diff with the latest</a>` : undefined,
  })}
<div class="cols"><div><div class="panel flush"><h2>Runs pinned to it</h2>${runs.items.length ? html`${table}${more}` : html`<p class="muted pad">No run.</p>`}</div></div>
<div><div class="panel"><h2>Version</h2>${facts}</div></div></div>`;
  return page(view, { title: `${p.id} ${v.codeVersion.slice(0, 8)}`, active: "pipelines", body });
}

/** The graph and source differences between two versions (`?from=&to=`), as `idem versions --diff` computes them. */
export async function versionDiffPage(engine: Engine, view: View, pipelineId: string): Promise<Html> {
  const p = engine.pipeline(pipelineId);
  const from = view.url.searchParams.get("from") ?? "";
  const to = view.url.searchParams.get("to") ?? "";
  if (!from || !to) throw new UsageError(`give the two code versions of ${p.id} to compare (from, to)`);
  const diff = await engine.codeDiff(p.id, from, to);
  const sources = diff.sources.map((s) => html`<div class="panel flush"><h2 class="mono">${s.file}</h2><pre class="diff">${diffLines(s.diff)}</pre></div>`);
  const body = html`${pageHead({
    crumbs: [["Pipelines", "/ui/pipelines"], [p.id, links.grid(p.id)], ["versions", links.versions(p.id)], "diff"],
    title: html`<a class="mono" href="${links.version(p.id, diff.from)}">${diff.from.slice(0, 12)}</a> → <a class="mono" href="${links.version(p.id, diff.to)}">${diff.to.slice(0, 12)}</a>`,
    sub: html`code versions of ${p.id} · ${plural(diff.sources.length, "file")} changed`,
    right: html`<a class="btn" href="${links.versionDiff(p.id, diff.to, diff.from)}">Swap</a>`,
  })}
<div class="panel"><h2>Graph</h2>${graphTable(diff.graph)}</div>
${sources.length ? sources : html`<div class="panel"><h2>Sources</h2><p class="muted">The same sources.</p></div>`}`;
  return page(view, { title: `${p.id} diff`, active: "pipelines", body });
}

function graphTable(graph: GraphDiff): Html {
  if (graph.added.length + graph.removed.length + graph.changed.length === 0) return html`<p class="muted">The same tasks, kinds and dependencies.</p>`;
  const row = (task: string, what: Html | string, detail: string) => html`<tr><td class="mono">${task}</td><td>${what}</td><td>${detail}</td></tr>`;
  return html`<table class="t graphdiff"><thead><tr><th>Task</th><th>Change</th><th>Detail</th></tr></thead><tbody>
${graph.added.map((id) => row(id, html`<span class="d-add">+ added</span>`, ""))}
${graph.removed.map((id) => row(id, html`<span class="d-del">− removed</span>`, ""))}
${graph.changed.map((c) => row(c.taskId, html`<span class="d-chg">~ changed</span>`, c.changes.join("; ")))}
</tbody></table>`;
}

/** A unified diff, one element per line, classed by what the line is: the page's stylesheet colours them. */
function diffLines(diff: string): Html[] {
  const lines = diff.endsWith("\n") ? diff.slice(0, -1).split("\n") : diff.split("\n");
  return lines.map((line) => {
    const cls = line.startsWith("+++") || line.startsWith("---") ? "d-file" : line.startsWith("@@") ? "d-hunk" : line.startsWith("+") ? "d-add" : line.startsWith("-") ? "d-del" : "";
    return html`<span${cls ? html` class="${cls}"` : ""}>${line}</span>\n`;
  });
}
