import type { Engine } from "../../../engine/engine.ts";
import type { Pipeline } from "../../../core/pipeline/types.ts";
import { html, seg, type Html } from "../html.ts";
import { frozenPeriodOf, type FrozenPeriod } from "../../../core/policy/frozen.ts";
import type { CodeStanding } from "../../../engine/records/code-choice.ts";
import type { AuditEntry } from "../../../store/port.ts";
import { actionForm, at, badge, frozenNote, links, openFrozenField, page, pageHead, plural, stateLabel, took, type View } from "../parts.ts";
import { instancesLink, mappedCounts, mappedTotal } from "../mapped.ts";
import { gantt } from "../gantt.ts";
import { sentence } from "../sentence.ts";

/** The audit actions of the schedule's trailing window: a restatement, and one refused (a frozen date). */
const RESTATE_ACTIONS = ["restate", "restate-refused"] as const;

/** A run: its interval, who triggered it and why, a Gantt of attempts, why anything is not running, and actions. */
/**
 * A live run whose code is not the latest: what the latest code would do to it (the tasks it still
 * has to run that it removed or runs as another kind) and the two choices, finishing on its own
 * code (recorded) or moving to the latest (a clear of the whole run on it, refused while it
 * cannot survive the move).
 */
function codeChoice(view: View, pipelineId: string, runId: string, standing: CodeStanding, kept: AuditEntry | null, freeze: FrozenPeriod | null): Html {
  const own = standing.codeVersion!;
  const latest = standing.latest!;
  const version = (v: string) => html`<a class="mono" href="${links.version(pipelineId, v)}">${v.slice(0, 12)}</a>`;
  const blocked = standing.cannotMove.length > 0;
  const said = blocked
    ? html`<b>The latest code (${version(latest)}) cannot take this run</b>: ${standing.cannotMove.join("; ")}. It finishes on its own code (${version(own)}) unless it is moved.`
    : html`<b>This run runs its own code (${version(own)})</b>; the latest is ${version(latest)}. It finishes on its own code unless it is moved.`;
  return html`<div class="note${blocked ? " bad" : ""}" id="code-choice" role="note">${said} <a href="${links.versionDiff(pipelineId, own, latest)}">What changed</a>
${kept ? html`<p class="muted" id="code-kept">Finishing on its own code: ${kept.actor} chose it at ${at(kept.at, true)} (audit entry #${kept.id}): ${kept.reason ?? ""}</p>` : ""}
<div class="choices">
<details><summary>Finish on its own code</summary>${actionForm(view, { action: `/ui/runs/${seg(runId)}/code/keep`, label: "Finish on its own code" })}</details>
<details><summary>Move it to the latest code</summary>${actionForm(view, {
    action: `/ui/runs/${seg(runId)}/clear`,
    label: "Run it again on the latest code",
    danger: true,
    body: html`<input type="hidden" name="code" value="latest"><p class="muted">Every task runs again on the latest code, history kept.${blocked ? " Refused while the tasks above are still to run: skip or mark them first, or finish on its own code." : ""}</p>${openFrozenField(view, freeze)}`,
  })}</details>
</div></div>`;
}

export async function runPage(engine: Engine, view: View, runId: string): Promise<Html> {
  const run = await engine.run(runId);
  const [tasks, attempts, why, restatements, standing, kept] = await Promise.all([
    // One row per task: a mapped task with its instances counted, never listed (there may be 100,000).
    engine.taskRows(runId), engine.taskRowAttempts(runId), engine.why(runId), engine.runAudit(runId, { actions: RESTATE_ACTIONS, limit: 50 }),
    engine.codeStanding(runId), engine.runAudit(runId, { actions: ["code-keep"], limit: 1 }),
  ]);
  let pipeline: Pipeline | null = null;
  try {
    pipeline = engine.pipeline(run.pipelineId);
  } catch {
    pipeline = null; // the pipeline was removed from the project; its runs stay readable
  }
  const freeze = pipeline ? frozenPeriodOf(engine.frozenPeriods(pipeline.id), run.businessDate) : null;
  const now = engine.clock.now();
  const last = new Map(attempts.map((a) => [a.taskId, a]));
  const failed = tasks.filter((t) => t.state === "failed" || t.state === "upstream_failed").length;
  const facts = html`<dl class="kv">
<dt>Business date</dt><dd><span class="date">${run.businessDate}</span></dd>
<dt>Interval</dt><dd>${at(run.intervalStart)} → ${at(run.intervalEnd)}</dd>
<dt>Trigger</dt><dd>${run.trigger}${run.backfillId ? html` · <a href="${links.backfill(run.backfillId)}">${run.backfillId}</a>` : ""}</dd>
<dt>Who</dt><dd>${run.triggeredBy ?? html`<span class="faint">the scheduler</span>`}</dd>
<dt>Why</dt><dd>${run.reason ?? html`<span class="faint">no reason given</span>`}</dd>
<dt>Created</dt><dd>${at(run.createdAt, true)}</dd>
<dt>Ran</dt><dd>${at(run.startedAt, true)} → ${run.endedAt ? at(run.endedAt, true) : html`<span class="faint">not finished</span>`} · ${took(run.startedAt, run.endedAt, now)}</dd>
${run.restateCount > 0 || run.restateNote ? html`<dt>Restated</dt><dd><span class="rst">↻${run.restateCount}</span> ${run.restateCount === 1 ? "once" : `${run.restateCount} times`}${run.restatedAt ? html`, last at ${at(run.restatedAt, true)}` : ""}${run.restateNote ? html`<div class="muted">not restated: ${run.restateNote}</div>` : ""}</dd>` : ""}
${freeze ? html`<dt>Frozen</dt><dd>${freeze.from}..${freeze.to} by ${freeze.owner}: ${freeze.reason}</dd>` : ""}
<dt>Graph version</dt><dd><code>${run.graphVersion.slice(0, 12)}</code></dd>
<dt>Code version</dt><dd>${run.codeVersion ? html`<a class="mono" href="${links.version(run.pipelineId, run.codeVersion)}">${run.codeVersion}</a>` : html`<span class="faint">none: each attempt runs the pipeline as loaded</span>`}</dd>
${Object.keys(run.params).length ? html`<dt>Params</dt><dd><code>${JSON.stringify(run.params)}</code></dd>` : ""}
</dl>`;
  const table = html`<table class="t"><thead><tr><th>Task</th><th>State</th><th>Try</th><th>Started</th><th>Took</th><th>Note</th></tr></thead><tbody>
${tasks.map((t) => {
    const a = last.get(t.taskId);
    const note = t.reason ?? (a?.errorMessage ? `${a.errorClass ?? "Error"}: ${a.errorMessage}` : t.state === "up_for_retry" && t.nextTryAt ? null : a?.summary ? JSON.stringify(a.summary) : null);
    return html`<tr><td><a class="mono" href="${links.task(runId, t.taskId)}">${t.taskId}</a>${t.pool ? html` <span class="pill" title="pool">⛁ ${t.pool}${t.slots > 1 ? ` ×${t.slots}` : ""}</span>` : ""}</td>
<td>${badge(t.state, { ti: `${runId}/${t.taskId}` })}${t.mapped ? html`<div class="mapped-row">${mappedCounts(t.mapped.states, (state) => instancesLink(runId, t.taskId, { state }))}
<a href="${instancesLink(runId, t.taskId)}">${plural(mappedTotal(t.mapped.states), "instance")} by key →</a></div>` : ""}</td><td class="num">${t.tryNumber}/${t.maxTries}</td><td>${at(t.startedAt)}</td><td class="num">${took(t.startedAt, t.endedAt, now)}</td>
<td>${t.state === "up_for_retry" && t.nextTryAt ? html`retry at ${at(t.nextTryAt, true)}` : note ? html`<span class="${a?.errorMessage && !t.reason ? "" : "muted"}">${note.length > 240 ? note.slice(0, 240) + "…" : note}</span>` : ""}</td></tr>`;
  })}</tbody></table>`;
  const codeDiffers = standing.codeVersion !== null && standing.latest !== null && standing.codeVersion !== standing.latest;
  const codeField = codeDiffers
    ? html`<label>Code<select name="code"><option value="same">same: its own, ${standing.codeVersion!.slice(0, 12)}</option><option value="latest">latest: ${standing.latest!.slice(0, 12)}</option></select></label>`
    : "";
  const taskOptions = tasks.map((t) => html`<option value="${t.taskId}">${t.taskId} (${stateLabel(t.state)})</option>`);
  const actions = html`<div class="actions">
${failed ? html`<details open><summary>Clear the ${failed} failed task instance(s)</summary>${actionForm(view, { action: `/ui/runs/${seg(runId)}/clear`, label: "Clear failed", body: html`<input type="hidden" name="failedOnly" value="1">${codeField}${openFrozenField(view, freeze)}` })}</details>` : ""}
<details${failed ? "" : " open"}><summary>Clear a task (runs it again, keeps history)</summary>${actionForm(view, {
    action: `/ui/runs/${seg(runId)}/clear`,
    label: "Clear",
    body: html`<label>Task<select name="taskId"><option value="">every task of the run</option>${taskOptions}</select></label>
<label class="check"><input type="checkbox" name="downstream" value="1" checked> with downstream</label>${codeField}${openFrozenField(view, freeze)}`,
  })}</details>
${pipeline ? html`<p class="muted">Skip or mark one task from its <a href="${links.task(runId, tasks[0]?.taskId ?? "")}">task instance page</a>.</p>` : ""}
</div>`;
  const body = html`${pageHead({
    crumbs: [["Pipelines", "/ui/pipelines"], [run.pipelineId, links.grid(run.pipelineId)], "run"],
    title: html`<span class="mono">${runId}</span> ${badge(run.state, { run: runId })}`,
    sub: html`${run.trigger} run for business date <span class="date">${run.businessDate}</span>${pipeline ? "" : " · the pipeline is no longer in the project"}`,
    right: html`<a class="btn" href="${links.graph(run.pipelineId, runId)}">Graph of this run</a>`,
  })}
${freeze ? frozenNote(view, freeze, run.businessDate) : ""}
${codeDiffers && run.state !== "success" && run.state !== "failed" ? codeChoice(view, run.pipelineId, runId, standing, kept[0] ?? null, freeze) : ""}
<div class="cols"><div>
<div class="panel"><h2>Why</h2><ul class="why">${why.map((line) => html`<li>${sentence(line)}</li>`)}</ul></div>
<div class="panel"><h2>Attempts</h2>${gantt(tasks.map((t) => t.taskId), attempts, now)}</div>
<div class="panel flush"><h2>Task instances</h2>${table}</div>
${restatements.length ? html`<div class="panel flush" id="restatements"><h2>Restatements</h2><table class="t"><thead><tr><th>When</th><th>What</th><th>Why</th><th>Tasks</th></tr></thead><tbody>
${restatements.map((e) => html`<tr><td>${at(e.at, true)}</td><td>${e.action === "restate" ? html`<span class="rst">↻${String(e.details.restatement ?? "")}</span> restated after <span class="date">${String(e.details.after ?? "")}</span> ran` : html`<span class="rst">↻!</span> not restated after <span class="date">${String(e.details.after ?? "")}</span> ran`}</td>
<td>${e.reason ?? ""}</td><td class="mono">${Array.isArray(e.details.tasks) ? (e.details.tasks as string[]).join(", ") : e.action === "restate" ? "all" : ""}</td></tr>`)}</tbody></table></div>` : ""}
</div><div>
<div class="panel"><h2>Run</h2>${facts}</div>
<div class="panel"><h2>Actions</h2>${actions}</div>
</div></div>`;
  return page(view, { title: runId, active: "pipelines", body });
}
