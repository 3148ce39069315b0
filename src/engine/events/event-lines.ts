import type { EngineEvent, EngineEventMap, EngineEventName, WorkerTrouble } from "./event-map.ts";

export type LogLevel = "debug" | "info" | "warn" | "error";

/** How an event reads in a process's log: its level and its sentence, in the engine's words. */
export interface EventLine {
  level: LogLevel;
  message: string;
}

type Describe<K extends EngineEventName> = (payload: EngineEventMap[K]) => EventLine;

const info = (message: string): EventLine => ({ level: "info", message });
const warn = (message: string): EventLine => ({ level: "warn", message });
const debug = (message: string): EventLine => ({ level: "debug", message });
const attempt = (p: { runId: string; taskId: string; tryNumber: number }) => `${p.runId} ${p.taskId} try ${p.tryNumber}`;

/**
 * Every event's line, one entry per name: a new event is a compile error here until it says how
 * it is logged. Routine events of every attempt and tick are `debug`; what an operator should see
 * in a quiet log is `info`; what went wrong and was ridden out is `warn`; `error` is a request
 * that failed unexpectedly.
 */
const LINES: { [K in EngineEventName]: Describe<K> } = {
  "scheduler:started": (p) => info(`scheduler ${p.holder}: ${p.pipelines} pipeline(s)`),
  "scheduler:tick": (p) => debug(`tick ${p.leader ? "as leader" : "standing by"}: ${p.durationMs} ms, ${p.lagMs} ms late; ${p.runsCreated} run(s) created, ${p.attemptsLost} attempt(s) lost`),
  "scheduler:tick-failed": (p) => warn(`tick failed, trying again: ${p.error}`),
  "lease:won": (p) => info(p.role === "scheduler" ? `scheduler ${p.holder} leads` : `watchdog ${p.holder} checks promises`),
  "lease:lost": (p) => info(p.role === "scheduler" ? `scheduler ${p.holder} stands by (leader: ${p.leader})` : `watchdog ${p.holder} stands by (checker: ${p.leader})`),
  "lease:renewal-failed": (p) => warn(`renewing the ${p.role} lease failed: ${p.error}`),
  "run:created": (p) => info(`created run ${p.runId} (${p.trigger})`),
  "run:ended": (p) => debug(`run ${p.runId} ended ${p.state} (by ${p.by === "lost-attempt" ? "a lost attempt" : p.by === "operator" ? "an operator" : "an attempt"})`),
  "intervals:skipped": (p) => info(`${p.pipelineId}: skipped ${p.count} interval(s) by catch-up policy "latest"`),
  "restate:started": (p) => info(`restating ${p.runId} after ${p.after} (restatement ${p.restatement})`),
  "restate:refused": (p) => info(`${p.runId}: ${p.reason}`),
  "backfill:run-started": (p) => info(`backfill ${p.backfillId}: started ${p.runId} (${p.action})`),
  "backfill:run-left": (p) => info(`backfill ${p.backfillId}: ${p.runId} is already ${p.state}; left alone`),
  "backfill:code-missing": (p) => warn(`backfill ${p.backfillId}: ${p.runId} left alone: ${p.reason}`),
  "backfill:ended": (p) => info(`backfill ${p.backfillId} ${p.state}: ${p.succeeded} succeeded, ${p.failed} failed`),
  "bundles:collected": (p) => info(`${p.pipelineId}: collected ${p.collected.length} old bundle(s)${p.collected.length ? ` (${p.collected.join(" ")})` : ""}${p.needed.length ? `; kept ${p.needed.join(" ")}, a run needs them` : ""}`),
  "bundles:collect-failed": (p) => warn(`${p.pipelineId}: collecting old bundles failed, trying again at the next collection: ${p.error}`),
  "attempt:lost": (p) => warn(`${attempt(p)}: lost (worker ${p.workerId} stopped renewing its lease); now ${p.taskState}`),
  "worker:started": (p) => info(`worker ${p.workerId}: concurrency ${p.concurrency}${p.prefetch ? `, prefetch ${p.prefetch}` : ""}`),
  "worker:claimed": (p) => debug(`claimed ${p.claimed} of ${p.wanted} wanted${p.finishes ? `, with ${p.finishes} result(s) recorded,` : ""} in ${p.durationMs} ms`),
  "attempt:claimed": (p) => debug(`${attempt(p)}: claimed${p.queueWaitMs === null ? "" : ` after ${p.queueWaitMs} ms queued`}`),
  "attempt:started": (p) => debug(`${attempt(p)}: started`),
  "attempt:finished": (p) => {
    const line = `${attempt(p)}: ${p.taskState ?? p.outcome}${p.errorMessage ? `: ${p.errorMessage}` : ""}`;
    return p.errorClass === null ? info(line) : warn(line);
  },
  "attempt:not-started": (p) => warn(`${attempt(p)}: not started, ${p.reason}`),
  "attempt:handed-back": (p) => info(`${p.runId} ${p.taskId}: ${p.reason}; handing it back${p.reloading ? " and reloading" : ""}`),
  "attempt:result-refused": (p) => warn(`${attempt(p)}: result refused, the attempt is no longer ours`),
  "worker:stopping": (p) => info(`stopping: waiting up to ${p.graceMs} ms for ${p.running} running attempt(s)`),
  "worker:handed-back": (p) => info(p.notStarted ? `handing back ${p.count} claimed attempt(s) that had not started` : `handing back ${p.count} attempt(s)`),
  "worker:store-failed": (p) => warn(troubleLine(p.trouble, p.error)),
  "external-job:cancelled": (p) => info(`${p.runId} ${p.taskId}: ${p.adapter} job ${p.handle} cancelled${p.note ? ` (${p.note})` : ""}`),
  "external-job:cancel-failed": (p) => warn(`${p.runId} ${p.taskId}: cancelling ${p.adapter} job ${p.handle} failed: ${p.error}; trying again later`),
  "host:started": (p) => debug(`task host ${p.pid} started (${p.hosts} alive)`),
  "host:exited": (p) => (p.expected ? debug : warn)(`task host ${p.pid} exited (${p.signal ?? `code ${p.code}`}${p.expected ? "" : ", unexpectedly"}; ${p.hosts} alive)`),
  "host:output": (p) => info(`task host ${p.pid}: ${p.text.trimEnd()}`),
  "pipelines:reloaded": (p) => info(`pipeline files reloaded: ${p.pipelines} pipeline(s)` +
    (p.added.length ? `; added ${p.added.join(", ")}` : "") + (p.changed.length ? `; changed ${p.changed.join(", ")}` : "") + (p.removed.length ? `; removed ${p.removed.join(", ")}` : "")),
  "pipelines:reload-failed": (p) => warn(`reloading pipeline files failed: ${p.error}`),
  "pipeline-file:broken": (p) => warn(`pipeline file not loaded, its pipelines do not run: ${p.message}`),
  "pipeline-file:fixed": (p) => info(`pipeline file fixed: ${p.file}`),
  "watchdog:failed": (p) => warn(`watchdog: ${p.error}`),
  "incident:opened": (p) => warn(`incident ${p.key}: ${p.message}`),
  "incident:resolved": (p) => info(`resolved ${p.key}: ${p.resolution}`),
  "incident:snooze-ended": (p) => warn(`snooze of ${p.key} ended: still ${p.message}`),
  "alert:logged": (p) => warn(`ALERT ${p.event} ${p.key}: ${p.cause}`),
  "alert:retrying": (p) => warn(`alert ${p.event} ${p.incidentKey} to ${p.notifier} failed (${p.error}); retrying in ${Math.round(p.retryInMs / 1000)}s`),
  "alert:delivery-failed": (p) => warn(`alert delivery: ${p.error}`),
  "notifier:failing": (p) => warn(`incident notifier_failing:${p.notifier}: ${p.notifier} failed ${p.failures} time(s) in a row`),
  "change-feed:failed": (p) => warn(`change feed${p.reading ? "" : " subscriber"}: ${p.error}`),
  "request:served": (p) => debug(`${p.method} ${p.path} ${p.status} (${p.durationMs} ms)`),
  "request:failed": (p) => ({ level: "error", message: `${p.method} ${p.path}: ${p.error}` }),
};

function troubleLine(trouble: WorkerTrouble, error: string): string {
  switch (trouble.kind) {
    case "finish-and-claim":
      return `recording ${trouble.results} result(s) with a claim failed (${error}); recording them one by one`;
    case "heartbeat":
      return `heartbeat failed: ${error}`;
    case "lease-renewal":
      return `lease renewal of ${trouble.attempts} attempt(s) failed: ${error}`;
    case "external-cancels":
      return `looking for remote jobs to cancel failed: ${error}`;
    case "gave-up":
      return `${trouble.what} failed, giving up: ${error}`;
  }
}

/** The event's level and sentence. */
export function eventLine(event: EngineEvent): EventLine {
  return (LINES[event.name] as (payload: EngineEvent["payload"]) => EventLine)(event.payload);
}

/**
 * The fields that locate an event, as the structured log names them: pipeline, run, task, try,
 * business date, worker (and the backfill, incident or lease holder it is about). Present only
 * when the payload has them.
 */
export function locatingFields(payload: object): Record<string, string | number> {
  const p = payload as Record<string, unknown>;
  const fields: Record<string, string | number> = {};
  for (const [from, to] of LOCATORS) {
    const value = p[from];
    if (typeof value === "string" || typeof value === "number") fields[to] = value;
  }
  return fields;
}

const LOCATORS: readonly (readonly [string, string])[] = [
  ["pipelineId", "pipeline"],
  ["runId", "run"],
  ["taskId", "task"],
  ["mapKey", "mapKey"],
  ["tryNumber", "try"],
  ["businessDate", "businessDate"],
  ["workerId", "worker"],
  ["backfillId", "backfill"],
  ["key", "incident"],
  ["holder", "holder"],
];

/** Collects the lines (info and above) of the events emitted, as text: for tests of what a part reports. */
export function eventLines(events: { onAny(listener: (event: EngineEvent) => void): () => void }, into: string[] = []): string[] {
  events.onAny((event) => {
    const line = eventLine(event);
    if (line.level !== "debug") into.push(line.message);
  });
  return into;
}
