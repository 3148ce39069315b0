import { UsageError } from "../../core/model/errors.ts";
import { describeAuditDetails } from "../../engine/audit-details.ts";
import { formatInstant } from "../../core/time/dates.ts";
import { isoTime, printJson, restated, table } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";
import { codeChoiceCommands } from "./keep-code.ts";
import { testClock } from "../test-clock.ts";

const PIPELINES = { pipelines: true };
const STATE_ONLY = { pipelines: false };

export function expected(cli: Cli, pipelineId: string, options: { from?: string; to?: string; limit: number; json?: boolean; now?: number }) {
  return withEngine(cli, { ...PIPELINES, clock: testClock(options.now, "fixed") }, async (engine) => {
    const entries = await engine.expected(pipelineId, { from: options.from, to: options.to, limit: options.limit });
    if (options.json) return printJson(entries);
    const tz = engine.pipeline(pipelineId).schedule.timezone;
    if (entries.length === 0) return console.log(`${pipelineId}: no scheduled intervals in that range`);
    console.log(
      table(
        ["date", "fires at", "status", "run", "restated", "note"],
        entries.map((e) => [
          e.interval.businessDate, formatInstant(e.firesAt, tz), e.status, e.runId,
          restated({ restateCount: e.restateCount, restatedAt: e.lastRestatedAt, restateNote: e.restateNote }), e.note,
        ]),
      ),
    );
    const missing = entries.filter((e) => e.status === "missing").length;
    if (missing > 0) console.log(`\n${missing} interval(s) due with no run`);
  });
}

export function pause(cli: Cli, pipelineId: string, options: { note?: string; stop?: boolean }) {
  return setPaused(cli, pipelineId, true, options);
}

export function unpause(cli: Cli, pipelineId: string, options: { note?: string }) {
  return setPaused(cli, pipelineId, false, options);
}

function setPaused(cli: Cli, pipelineId: string, paused: boolean, options: { note?: string; stop?: boolean }) {
  return withEngine(cli, PIPELINES, async (engine, actor) => {
    const state = paused ? await engine.pause(pipelineId, { note: options.note, stop: options.stop, actor }) : await engine.unpause(pipelineId, { note: options.note, actor });
    console.log(`${pipelineId} ${state.paused ? "paused" : "unpaused"}${options.note ? `: ${options.note}` : ""}`);
  });
}

export function pools(cli: Cli, options: { json?: boolean }) {
  return withEngine(cli, STATE_ONLY, async (engine) => {
    const list = await engine.pools();
    if (options.json) return printJson(list);
    if (list.length === 0) return console.log("no pools (create one: idem pools set NAME --slots N)");
    console.log(
      table(
        ["pool", "slots", "used", "held by"],
        list.map((p) => [p.name, p.slots, p.used, p.holders.map((h) => `${h.runId} ${h.taskId} (${h.slots}${h.remote ? ", remote job" : ""})`).join(", ")]),
      ),
    );
  });
}

export function setPool(cli: Cli, name: string, options: { slots: number; description?: string }) {
  return withEngine(cli, STATE_ONLY, async (engine, actor) => {
    await engine.setPool(name, options.slots, { description: options.description, actor });
    console.log(`pool ${name}: ${options.slots} slot(s)`);
  });
}

export function deletePool(cli: Cli, name: string) {
  return withEngine(cli, STATE_ONLY, async (engine, actor) => {
    await engine.deletePool(name, { actor });
    console.log(`pool ${name} deleted`);
  });
}

export function why(cli: Cli, runId: string, taskId: string | undefined) {
  return withEngine(cli, PIPELINES, async (engine) => {
    const lines = await engine.why(runId, taskId);
    for (const line of lines) console.log(line);
    if (taskId === undefined) for (const line of await codeChoiceCommands(engine, runId)) console.log(line);
  });
}

function needReason(reason: string | undefined): string {
  if (!reason?.trim()) throw new UsageError('give --reason "...": manual actions are audited');
  return reason;
}

export function trigger(cli: Cli, pipelineId: string, flags: { date: string; reason?: string; openFrozen?: string }) {
  return withEngine(cli, PIPELINES, async (engine, actor) => {
    const run = await engine.trigger(pipelineId, flags.date, { actor, reason: flags.reason, openFrozen: flags.openFrozen });
    console.log(`run ${run.runId} created (queued)`);
  });
}

export function clear(cli: Cli, runId: string, flags: { task?: string; downstream?: boolean; upstream?: boolean; failedOnly?: boolean; reason?: string; openFrozen?: string; code?: string }) {
  return withEngine(cli, PIPELINES, async (engine, actor) => {
    const tasks = await engine.clear(runId, { taskId: flags.task, downstream: flags.downstream, upstream: flags.upstream, failedOnly: flags.failedOnly, reason: needReason(flags.reason), openFrozen: flags.openFrozen, code: flags.code, actor });
    console.log(`cleared ${runId}: ${tasks.filter((t) => t.state === "queued" || t.state === "scheduled").map((t) => t.taskId).join(", ")}`);
  });
}

export function skip(cli: Cli, runId: string, taskId: string, flags: { reason?: string }) {
  return withEngine(cli, PIPELINES, async (engine, actor) => {
    const ti = await engine.skip(runId, taskId, { reason: needReason(flags.reason), actor });
    console.log(`${runId} ${taskId}: skipped (${ti.reason})`);
  });
}

export function mark(cli: Cli, runId: string, taskId: string, flags: { state: string; reason?: string }) {
  return withEngine(cli, PIPELINES, async (engine, actor) => {
    if (flags.state !== "success" && flags.state !== "failed") throw new UsageError(`--state ${flags.state}: expected success or failed`);
    let details: Record<string, unknown> = {};
    const ti = await engine.mark(runId, taskId, { state: flags.state, reason: needReason(flags.reason), actor, onAudit: (e) => (details = e.details) });
    if (typeof details.keyCount === "number") {
      // a key pattern: what it matched and marked, and where its mapped task stands now
      console.log(`${runId} ${taskId}: ${details.markedCount} of ${details.keyCount} matching instances marked ${flags.state} (${ti.taskId}: ${ti.state})`);
    } else {
      console.log(`${runId} ${taskId}: ${ti.state}`);
    }
  });
}

export function audit(cli: Cli, flags: { pipeline?: string; limit: number; json?: boolean }) {
  return withEngine(cli, STATE_ONLY, async (engine) => {
    const entries = await engine.audit({ pipelineId: flags.pipeline, limit: flags.limit });
    if (flags.json) return printJson(entries);
    if (entries.length === 0) return console.log("no manual actions recorded");
    console.log(
      table(
        ["when", "who", "action", "pipeline", "run", "task", "why", "version", "details"],
        entries.map((e) => [isoTime(e.at), e.actor, e.action, e.pipelineId, e.runId, e.taskId, e.reason, e.graphVersion, describeAuditDetails(e)]),
      ),
    );
  });
}
