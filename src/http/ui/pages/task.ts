import { NotFoundError, UsageError } from "../../../core/model/errors.ts";
import type { Engine } from "../../../engine/engine.ts";
import type { ExternalJobRecord } from "../../../store/port.ts";
import { html, query, seg, type Html } from "../html.ts";
import { sentence } from "../sentence.ts";
import { highlight, searchLog, type LogHit, type LogSearch } from "../log-search.ts";
import { frozenPeriodOf } from "../../../core/policy/frozen.ts";
import { actionForm, at, badge, duration, frozenNote, links, openFrozenField, page, pageHead, plural, took, type View } from "../parts.ts";
import { instancesLink, mappedCounts, mappedTotal } from "../mapped.ts";
import { parseMappedTaskId } from "../../../core/policy/fan-out.ts";

/** One page of a log is this many bytes; the first view shows the last page (where errors are). */
export const LOG_PAGE_BYTES = 64 * 1024;

/** A task instance: every attempt (try, worker, times, exit, error, summary) and each attempt's log, paged. */
export async function taskPage(engine: Engine, view: View, runId: string, taskId: string): Promise<Html> {
  const run = await engine.run(runId);
  // The one task instance: a run that maps 100,000 items is not read whole to show one of them.
  const ti = await engine.taskInstance(runId, taskId).catch(async (error: unknown) => {
    if (!(error instanceof NotFoundError)) throw error;
    const tasks = await engine.taskRows(runId);
    throw new NotFoundError("task", `run ${runId} has no task "${taskId}" (tasks: ${tasks.map((t) => t.taskId).join(", ")})`);
  });
  const mappedKey = parseMappedTaskId(taskId);
  const attempts = await engine.attempts(runId, taskId);
  const jobs = await engine.externalJobs(runId, taskId);
  const why = await engine.why(runId, taskId);
  const now = engine.clock.now();
  const freeze = engine.pipelines().some((p) => p.id === run.pipelineId) ? frozenPeriodOf(engine.frozenPeriods(run.pipelineId), run.businessDate) : null;
  const tryParam = view.url.searchParams.get("try");
  const chosenTry = tryParam === null ? attempts.at(-1)?.tryNumber : Number(tryParam);
  if (tryParam !== null && !attempts.some((a) => a.tryNumber === chosenTry)) {
    throw new NotFoundError("attempt", `task ${taskId} of run ${runId} has no try ${tryParam} (tries: ${attempts.map((a) => a.tryNumber).join(", ") || "none yet"})`);
  }
  const log = chosenTry === undefined ? null : await logPage(engine, runId, taskId, chosenTry, view.url.searchParams.get("offset"));
  const base = links.task(runId, taskId);

  const attemptRows = attempts.map((a) => html`<tr${a.tryNumber === chosenTry ? html` class="sel"` : ""}>
<td class="num"><a href="${base}${query({ try: a.tryNumber })}">try ${a.tryNumber}</a></td><td>${badge(a.state)}</td><td class="mono">${a.workerId}${a.pid ? ` pid ${a.pid}` : ""}</td>
<td>${at(a.startedAt, true)}</td><td>${a.endedAt ? at(a.endedAt, true) : html`<span class="faint">running</span>`}</td><td class="num">${took(a.startedAt, a.endedAt, now)}</td>
<td class="num">${a.exitCode ?? "–"}</td>
<td>${a.errorMessage ? html`<b>${a.errorClass ?? "Error"}</b>: ${a.errorMessage}` : a.summary ? html`<code>${JSON.stringify(a.summary)}</code>` : ""}</td></tr>`);

  const q = (view.url.searchParams.get("q") ?? "").trim();
  const search = log && q ? await searchLog(engine, runId, taskId, log.tryNumber, q) : null;
  const logPanel = log
    ? html`<div class="panel flush" id="log"><div class="logbar"><h2 class="inline">Log of try ${log.tryNumber}</h2>
<span class="muted">bytes ${log.offset.toLocaleString("en")}–${log.nextOffset.toLocaleString("en")} of ${log.size.toLocaleString("en")}</span>
${log.offset > 0 ? html`<a href="${base}${query({ try: log.tryNumber, offset: Math.max(0, log.offset - LOG_PAGE_BYTES), q })}#log">← earlier</a>` : ""}
${log.nextOffset < log.size ? html`<a href="${base}${query({ try: log.tryNumber, offset: log.nextOffset, q })}#log">later →</a>` : ""}
${log.offset > 0 || log.nextOffset < log.size ? html`<a href="${base}${query({ try: log.tryNumber, q })}#log">end</a>` : ""}
<span class="sp"></span>${log.running ? html`<span id="tail-status" class="b s-running">following the running attempt</span>` : ""}
<a href="/ui/runs/${seg(runId)}/tasks/${seg(taskId)}/log${query({ try: log.tryNumber, download: 1 })}">download whole log</a></div>
<form method="get" action="${base}" class="logbar logsearch" role="search"><input type="hidden" name="try" value="${log.tryNumber}">
<label class="check">Search the whole log <input type="search" name="q" value="${q}" placeholder="text, e.g. error" aria-label="search the log of try ${log.tryNumber}"></label>
<button type="submit">Search</button>${q ? html`<a href="${base}${query({ try: log.tryNumber })}#log">clear search</a>` : ""}</form>
${search ? searchResults(search, (hit) => `${base}${query({ try: log.tryNumber, offset: hit.pageOffset, q })}#log`) : ""}
<pre class="log" tabindex="0" aria-label="log of try ${log.tryNumber}"${log.nextOffset >= log.size ? html` data-end` : ""}${log.running ? html` data-tail="/ui/runs/${seg(runId)}/tasks/${seg(taskId)}/log${query({ try: log.tryNumber })}" data-next="${log.nextOffset}"` : ""}>${log.text ? highlight(log.text, q) : log.running ? "" : "(the attempt wrote nothing to its log)"}</pre></div>`
    : html`<div class="panel"><h2>Log</h2><div class="empty">No attempt yet, so no log.</div></div>`;

  const downstreamNote = html`<label class="check"><input type="checkbox" name="downstream" value="1" checked> with downstream</label>`;
  const actions = html`<div class="actions">
<details open><summary>Clear (run it again)</summary>${actionForm(view, { action: `/ui/runs/${seg(runId)}/clear`, label: "Clear task", body: html`<input type="hidden" name="taskId" value="${taskId}">${downstreamNote}${openFrozenField(view, freeze)}` })}</details>
<details><summary>Skip</summary>${actionForm(view, { action: `/ui/runs/${seg(runId)}/tasks/${seg(taskId)}/skip`, label: "Skip task" })}</details>
<details><summary>Mark success or failed</summary>${actionForm(view, {
    action: `/ui/runs/${seg(runId)}/tasks/${seg(taskId)}/mark`,
    label: "Mark",
    danger: true,
    body: html`<label>State<select name="state"><option value="success">success</option><option value="failed">failed</option></select></label>`,
  })}</details></div>`;

  const body = html`${pageHead({
    crumbs: [["Pipelines", "/ui/pipelines"], [run.pipelineId, links.grid(run.pipelineId)], [runId, links.run(runId)],
      ...(mappedKey ? [[`${mappedKey.taskId} instances`, instancesLink(runId, mappedKey.taskId)] as const] : []), "task"],
    title: html`<span class="mono">${taskId}</span> ${badge(ti.state, { ti: `${runId}/${taskId}` })}`,
    sub: html`business date <span class="date">${run.businessDate}</span> · try ${ti.tryNumber} of ${ti.maxTries} · trigger rule ${ti.triggerRule}${ti.pool ? ` · pool ${ti.pool} (${ti.slots} slot${ti.slots === 1 ? "" : "s"})` : ""}`,
  })}
${freeze ? frozenNote(view, freeze, run.businessDate) : ""}
${ti.mapped ? html`<div class="panel" id="mapped"><h2>Mapped instances</h2><p>${mappedCounts(ti.mapped.states, (state) => instancesLink(runId, taskId, { state }))}</p>
<p><a href="${instancesLink(runId, taskId)}">${plural(mappedTotal(ti.mapped.states), "instance")} by key →</a> <span class="muted">The attempts below found the list; each instance has its own.</span></p></div>` : ""}
<div class="cols"><div>
<div class="panel flush"><h2>Attempts</h2>${attempts.length ? html`<table class="t"><thead><tr><th>Try</th><th>State</th><th>Worker</th><th>Started</th><th>Ended</th><th>Took</th><th>Exit</th><th>Error or summary</th></tr></thead><tbody>${attemptRows}</tbody></table>` : html`<div class="empty">Not run yet.</div>`}</div>
${jobs.length ? externalJobsPanel(jobs) : ""}
${logPanel}
</div><div>
<div class="panel" id="why"><h2>Why</h2><ul class="why">${why.map((line) => html`<li>${sentence(line)}</li>`)}</ul>
${ti.reason ? html`<p class="muted">Reason: ${ti.reason}</p>` : ""}${ti.state === "up_for_retry" && ti.nextTryAt ? html`<p>Next try at ${at(ti.nextTryAt, true)} (in ${duration(ti.nextTryAt - now)})</p>` : ""}</div>
<div class="panel"><h2>Actions</h2>${actions}</div>
</div></div>`;
  return page(view, { title: `${taskId} · ${runId}`, active: "pipelines", body });
}

/** The lines that match, each a link to the page of the log it is on; the count says when more matched than are listed. */
function searchResults(search: LogSearch, hrefOf: (hit: LogHit) => string): Html {
  if (search.total === 0) return html`<p class="logbar muted" role="status">No line of the ${search.lines.toLocaleString("en")} contains “${search.query}”.</p>`;
  return html`<div class="hits" role="status"><p class="muted">${search.total.toLocaleString("en")} of ${search.lines.toLocaleString("en")} lines contain “${search.query}”${search.total > search.hits.length ? `; the first ${search.hits.length} are listed` : ""}.</p>
<ol class="hitlist">${search.hits.map((hit) => html`<li><a href="${hrefOf(hit)}">line ${hit.line.toLocaleString("en")}</a> <code>${highlight(hit.text, search.query)}</code></li>`)}</ol></div>`;
}

interface LogPage {
  tryNumber: number;
  text: string;
  offset: number;
  nextOffset: number;
  size: number;
  running: boolean;
}

async function logPage(engine: Engine, runId: string, taskId: string, tryNumber: number, offsetParam: string | null): Promise<LogPage> {
  let offset: number;
  if (offsetParam === null) {
    // The first view is the end of the log, from the start of a line.
    const { size } = await engine.logRange(runId, taskId, tryNumber, { offset: 0, length: 0 });
    offset = Math.max(0, size - LOG_PAGE_BYTES);
  } else {
    offset = Number(offsetParam);
    if (!Number.isInteger(offset) || offset < 0) throw new UsageError(`offset=${offsetParam}: expected a byte offset >= 0`);
  }
  const range = await engine.logRange(runId, taskId, tryNumber, { offset, length: LOG_PAGE_BYTES });
  let bytes = range.bytes;
  let start = Math.min(offset, range.size);
  if (offsetParam === null && start > 0) {
    const newline = bytes.indexOf(10);
    if (newline >= 0) {
      bytes = bytes.subarray(newline + 1);
      start += newline + 1;
    }
  }
  bytes = wholeCharacters(bytes);
  return { tryNumber, text: bytes.toString("utf8"), offset: start, nextOffset: start + bytes.length, size: range.size, running: !range.ended };
}

/** The most a tail fetch or a download reads at once from this page's route; the API serves bigger files in ranges. */
const CHUNK_LIMIT = 16 * 1024 * 1024;

/** What the tail script and the download link fetch: the log from a byte offset on (or all of it). */
/** The remote jobs an external task submitted: what a person needs to find one in its own engine. */
function externalJobsPanel(jobs: readonly ExternalJobRecord[]): Html {
  const rows = jobs.map((j) => html`<tr><td>${j.tryNumber}</td><td>${badge(JOB_BADGE[j.state], undefined, j.state === "open" ? "waiting" : j.state.replace("_", " "))}</td>
<td><code>${j.adapter}</code> <code>${j.handle}</code>${safeLink(j.link) ? html` <a href="${j.link!}" rel="noopener noreferrer">open</a>` : ""}</td>
<td>${j.heldPool && j.heldSlots > 0 ? `${slotsOf(j)}` : html`<span class="faint">none</span>`}</td>
<td>${at(j.submittedAt)}</td><td>${j.endedAt === null ? "" : at(j.endedAt)}</td><td>${j.note ?? ""}</td></tr>`);
  // Only a job not yet ended keeps its slots; an ended one gave them back (its row still says which it held).
  const holding = jobs.filter((j) => j.endedAt === null && j.heldPool && j.heldSlots > 0);
  const note = holding.map((j) => html`<p id="pool-held">While its remote job runs, this task holds ${slotsOf(j)} (holdPoolWhileRemote): no worker slot, and the pool's other tasks wait for them.</p>`);
  return html`<div class="panel flush"><h2>Remote jobs</h2>${note}<table class="t"><thead><tr><th>Try</th><th>State</th><th>Job</th><th>Pool slots</th><th>Submitted</th><th>Ended</th><th>Note</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

function slotsOf(job: ExternalJobRecord): string {
  return `${job.heldSlots} slot${job.heldSlots === 1 ? "" : "s"} of pool ${job.heldPool}`;
}

/** A job's state in the colours of the task states it is like. */
const JOB_BADGE: Record<ExternalJobRecord["state"], string> = { open: "running", cancel_requested: "up_for_retry", succeeded: "success", failed: "failed", cancelled: "skipped" };

/** Only a web page is a link: an adapter's link is shown, never followed, if it is anything else (javascript:, data:). */
function safeLink(link: string | null): boolean {
  return link !== null && /^https?:\/\//i.test(link);
}

export async function taskLogChunk(engine: Engine, runId: string, taskId: string, params: URLSearchParams) {
  const tryParam = params.get("try");
  const tryNumber = tryParam === null ? (await engine.attempts(runId, taskId)).at(-1)?.tryNumber : Number(tryParam);
  if (tryNumber === undefined || !Number.isInteger(tryNumber)) throw new NotFoundError("attempt", `task ${taskId} of run ${runId} has not run yet`);
  const download = params.has("download");
  const offset = download ? 0 : Number(params.get("offset") ?? 0);
  if (!Number.isInteger(offset) || offset < 0) throw new UsageError(`offset=${params.get("offset")}: expected a byte offset >= 0`);
  const range = await engine.logRange(runId, taskId, tryNumber, { offset, length: CHUNK_LIMIT });
  const bytes = wholeCharacters(range.bytes);
  return {
    text: bytes.toString("utf8"),
    nextOffset: Math.min(offset, range.size) + bytes.length,
    running: !range.ended,
    download,
    filename: `${runId.replace(/[^A-Za-z0-9_.@-]/g, "_")}.${taskId}.try${tryNumber}.log`,
  };
}

/** Drops a UTF-8 character cut at the end of a byte range; the next range starts with it whole. */
export function wholeCharacters(bytes: Buffer): Buffer {
  let i = bytes.length - 1;
  let continuation = 0;
  while (i >= 0 && continuation < 3 && (bytes[i]! & 0xc0) === 0x80) {
    i--;
    continuation++;
  }
  if (i < 0) return bytes;
  const lead = bytes[i]!;
  const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return length > continuation + 1 ? bytes.subarray(0, i) : bytes;
}
