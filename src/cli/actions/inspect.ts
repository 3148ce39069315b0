import { formatInstant } from "../../core/time/dates.ts";
import { elapsed, isoTime, printJson, restated, table } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";
import { testClock } from "../test-clock.ts";
import { streamLog, tailOffset } from "../../engine/logs/read-log.ts";

const STATE_ONLY = { pipelines: false };

export function runs(cli: Cli, pipelineId: string, options: { limit: number; json?: boolean }) {
  return withEngine(cli, STATE_ONLY, async (engine) => {
    const runs = await engine.runs(pipelineId, options.limit);
    // Only an empty answer needs the pipeline files: to tell a typo from a pipeline that has not run.
    if (runs.length === 0) await withEngine(cli, { pipelines: true }, (loaded) => loaded.runs(pipelineId, 1));
    if (options.json) return printJson(runs);
    if (runs.length === 0) return console.log(`no runs of ${pipelineId} yet`);
    console.log(
      table(
        ["run", "date", "state", "trigger", "by", "started", "took", "restated", "code"],
        runs.map((r) => [r.runId, r.businessDate, r.state, r.trigger, r.triggeredBy, isoTime(r.startedAt), elapsed(r.startedAt, r.endedAt), restated(r), r.codeVersion ?? ""]),
      ),
    );
  });
}

export function tasks(cli: Cli, runId: string, options: { json?: boolean; mapped?: string; after?: string; prefix?: string; state?: string; limit: number }) {
  if (options.mapped !== undefined) return mappedTasks(cli, runId, options.mapped, options);
  return withEngine(cli, STATE_ONLY, async (engine) => {
    // One row per task: a mapped task with its instances counted by state, never listed (there may be 100,000).
    const tasks = await engine.taskRows(runId);
    const attempts = await engine.taskRowAttempts(runId);
    const last = new Map(attempts.map((a) => [a.taskId, a]));
    if (options.json) return printJson(tasks.map((t) => ({ ...t, lastAttempt: last.get(t.taskId) ?? null })));
    console.log(
      table(
        ["task", "state", "try", "started", "took", "note"],
        tasks.map((t) => {
          const a = last.get(t.taskId);
          return [
            t.taskId,
            t.state,
            `${t.tryNumber}/${t.maxTries}`,
            isoTime(t.startedAt),
            elapsed(t.startedAt, t.endedAt),
            t.mapped
              ? mappedCounts(t.mapped.states, t.mapped.total)
              : t.reason ?? (a?.errorMessage ? `${a.errorClass}: ${a.errorMessage}` : a?.summary ? JSON.stringify(a.summary) : ""),
          ];
        }),
      ),
    );
    const mapped = tasks.filter((t) => t.mapped);
    if (mapped.length > 0) console.log(`keys: idem tasks ${runId} --mapped ${mapped[0]!.taskId}${mapped.length > 1 ? ` (or ${mapped.slice(1).map((t) => t.taskId).join(", ")})` : ""}`);
  });
}

/** A mapped task's instances in one note: how many, then the count of each state that has any. */
function mappedCounts(states: Readonly<Record<string, number>>, total: number): string {
  const counts = Object.entries(states).filter(([, n]) => n > 0).map(([state, n]) => `${n} ${state.replace(/_/g, " ")}`);
  return `${total} mapped instance${total === 1 ? "" : "s"}${counts.length ? `: ${counts.join(", ")}` : ""}`;
}

function mappedTasks(cli: Cli, runId: string, taskId: string, options: { json?: boolean; after?: string; prefix?: string; state?: string; limit: number }) {
  return withEngine(cli, STATE_ONLY, async (engine) => {
    const page = await engine.mappedInstances(runId, taskId, {
      after: options.after, keyPrefix: options.prefix, states: options.state ? [options.state] : undefined, limit: options.limit,
    });
    if (options.json) return printJson(page);
    if (page.items.length === 0) return console.log(`no instances of ${taskId} in run ${runId}${options.after || options.prefix || options.state ? " match" : ""}`);
    console.log(
      table(
        ["key", "state", "try", "note"],
        page.items.map((i) => [i.key, i.state, String(i.tryNumber), i.reason ?? (i.summary ? JSON.stringify(i.summary) : "")]),
      ),
    );
    if (page.next !== null) console.log(`more: idem tasks ${runId} --mapped ${taskId} --after ${JSON.stringify(page.next)}`);
  });
}

export function logs(cli: Cli, runId: string, taskId: string, options: { try?: number; tail?: number; follow?: boolean }) {
  return withEngine(cli, STATE_ONLY, async (engine) => {
    const tail = options.tail;
    const { attempt, path } = await engine.logOf(runId, taskId, options.try);
    await streamLog(path, {
      from: tail === undefined ? 0 : tailOffset(path, tail),
      write: (chunk) => new Promise<void>((resolve) => (process.stdout.write(chunk) ? resolve() : process.stdout.once("drain", resolve))),
      more: options.follow ? () => engine.attemptRunning(runId, taskId, attempt.attemptId) : undefined,
    });
  });
}

export function next(cli: Cli, pipelineId: string, options: { count: number; json?: boolean; now?: number }) {
  return withEngine(cli, { pipelines: true, clock: testClock(options.now, "fixed") }, async (engine) => {
    const due = engine.preview(pipelineId, options.count);
    const tz = engine.pipeline(pipelineId).schedule.timezone;
    if (options.json) {
      return printJson(due.map((d) => ({ ...d.interval, startIso: isoTime(d.interval.start), endIso: isoTime(d.interval.end), firesAt: isoTime(d.firesAt) })));
    }
    if (due.length === 0) return console.log(`${pipelineId} has no scheduled runs ahead (${engine.pipeline(pipelineId).schedule.describe()})`);
    console.log(
      table(
        ["date", "interval start", "interval end", "fires at"],
        due.map((d) => [d.interval.businessDate, formatInstant(d.interval.start, tz), formatInstant(d.interval.end, tz), formatInstant(d.firesAt, tz)]),
      ),
    );
    const restating = await engine.restateEstimate(pipelineId);
    if (restating) console.log(`\n${restating.summary}`);
  });
}
