import { UsageError } from "../../core/model/errors.ts";
import { formatDuration } from "../../core/time/duration.ts";
import type { BackfillPlan, Engine } from "../../engine/engine.ts";
import type { BackfillProgress } from "../../store/port.ts";
import { elapsed, isoTime, printJson, table } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";

interface BackfillFlags {
  from?: string;
  to?: string;
  reason?: string;
  maxActiveRuns: number;
  reprocess: string;
  backwards?: boolean;
  dryRun?: boolean;
  tasks?: string;
  downstream?: boolean;
  openFrozen?: string;
  code?: string;
  follow: boolean;
  json?: boolean;
}

export function backfill(cli: Cli, pipelineId: string | undefined, flags: BackfillFlags) {
  return withEngine(cli, { pipelines: true }, async (engine, actor) => {
    if (!pipelineId) throw new UsageError("give the pipeline: idem backfill <pipeline> --from D1 --to D2 --reason \"...\"");
    if (!flags.from || !flags.to) throw new UsageError("give the range: --from YYYY-MM-DD --to YYYY-MM-DD");
    if (!["none", "failed", "all"].includes(flags.reprocess)) throw new UsageError(`--reprocess ${flags.reprocess}: expected none, failed or all`);
    const request = {
      from: flags.from,
      to: flags.to,
      reprocess: flags.reprocess as "none" | "failed" | "all",
      backwards: flags.backwards ?? false,
      maxActiveRuns: flags.maxActiveRuns,
      tasks: flags.tasks,
      downstream: flags.downstream ?? false,
      openFrozen: flags.openFrozen,
      code: flags.code,
    };
    if (flags.dryRun) {
      const plan = await engine.planBackfill(pipelineId, request);
      return flags.json ? printJson(plan) : printPlan(plan);
    }
    if (!flags.reason) throw new UsageError('a backfill needs --reason "..."');
    const { backfill: created, created: isNew, plan } = await engine.backfill(pipelineId, { ...request, reason: flags.reason, actor });
    if (flags.json) printJson({ ...created, created: isNew, plan });
    else {
      printPlan(plan);
      console.log(isNew ? `\nbackfill ${created.backfillId} created` : `\nthe same backfill is already ${created.state}: ${created.backfillId} (nothing duplicated)`);
    }
    if (flags.follow && !flags.json) await follow(engine, created.backfillId, plan);
  });
}

export const pause = (cli: Cli, backfillId: string, flags: { reason?: string }) => control(cli, backfillId, "pause", flags);
export const resume = (cli: Cli, backfillId: string, flags: { reason?: string }) => control(cli, backfillId, "resume", flags);
export const cancel = (cli: Cli, backfillId: string, flags: { reason?: string }) => control(cli, backfillId, "cancel", flags);

function control(cli: Cli, backfillId: string, action: "pause" | "resume" | "cancel", flags: { reason?: string }) {
  return withEngine(cli, { pipelines: true }, async (engine, actor) => {
    const updated = await engine.controlBackfill(backfillId, action, { actor, reason: flags.reason });
    console.log(`backfill ${backfillId} ${updated.state}`);
  });
}

export function backfills(cli: Cli, flags: { pipeline?: string; json?: boolean }) {
  return withEngine(cli, { pipelines: false }, async (engine) => {
    const list = await engine.backfills({ pipelineId: flags.pipeline });
    if (flags.json) return printJson(list);
    if (list.length === 0) return console.log("no backfills");
    console.log(
      table(
        ["backfill", "pipeline", "range", "state", "done", "running", "failed", "by", "reason"],
        list.map((b) => [
          b.backfillId, b.pipelineId, `${b.fromDate}..${b.toDate}`, b.state,
          `${b.progress.succeeded + b.progress.failed}/${b.progress.planned}`, b.progress.running + b.progress.queued,
          b.progress.failed, b.actor, b.reason,
        ]),
      ),
    );
  });
}

function printPlan(plan: BackfillPlan): void {
  console.log(
    table(
      ["date", "action", "why", "code"],
      plan.items.map((i) => [i.businessDate, i.action, i.why, i.action === "create" || i.action === "rerun" ? i.codeVersion ?? "-" : "-"]),
    ),
  );
  const count = (a: string) => plan.items.filter((i) => i.action === a).length;
  console.log(`\n${plan.pipelineId} ${plan.from}..${plan.to}: ${count("create")} to create, ${count("rerun")} to rerun, ${count("leave")} left, ${count("refuse")} refused; at most ${plan.maxActiveRuns} at once; runs again on ${plan.code === "same" ? "their own code" : "the latest code"}`);
  const e = plan.estimate;
  console.log(
    e.p50Ms === null
      ? "estimate: no history (no successful attempt of these tasks yet)"
      : `estimate: ${formatDuration(e.p50Ms)} (p50), ${formatDuration(e.p90Ms!)} (p90)` +
          (e.tasksWithoutHistory.length ? `; no history for ${e.tasksWithoutHistory.join(", ")}` : ""),
  );
  const m = plan.mapped;
  if (m.tasks.length === 0) return;
  const n = (count: number) => count.toLocaleString("en-US");
  console.log(`mapped work (${m.basis}):`);
  for (const t of m.tasks) {
    console.log(t.perDate === null
      ? `  ${t.taskId}: no completed run to estimate from`
      : `  ${t.taskId}: ~${n(t.perDate)} instances a date (median of ${t.runsSeen} completed run${t.runsSeen === 1 ? "" : "s"}, last ${n(t.last!)}) x ${m.dates} = ~${n(t.instances!)}`);
  }
  console.log(`  total: ~${n(m.instances)} mapped instances (estimate)${m.tasksWithoutHistory.length ? `, not counting ${m.tasksWithoutHistory.join(", ")}` : ""}`);
}

/**
 * Follows a backfill to its end: a live bar on a terminal, plain lines otherwise. When no
 * scheduler is running, this process runs one (and a worker) until the backfill ends.
 */
async function follow(engine: Engine, backfillId: string, plan: BackfillPlan): Promise<void> {
  const stop = new AbortController();
  process.once("SIGINT", () => stop.abort());
  const here = await engine.runBackfillHere(backfillId, plan.maxActiveRuns, stop.signal);
  if (here) console.log("no scheduler is running: running this backfill here (Ctrl-C stops; the backfill continues with `idem scheduler`)");
  const tty = process.stdout.isTTY === true;
  const started = Date.now();
  let last = "";
  try {
    for (;;) {
      const status = await engine.backfillStatus(backfillId);
      const line = progressLine(status.progress, Date.now() - started, tty);
      if (tty) process.stdout.write(`\r${line}\x1b[K`);
      else if (line !== last) console.log(line);
      last = line;
      if (!["running", "paused"].includes(status.state) || stop.signal.aborted) {
        if (tty) process.stdout.write("\n");
        console.log(`backfill ${backfillId} ${status.state}${status.endedAt ? ` at ${isoTime(status.endedAt)} after ${elapsed(status.createdAt, status.endedAt)}` : ""}`);
        if (status.state === "failed") process.exitCode = 1;
        return;
      }
      await new Promise((r) => setTimeout(r, tty ? 200 : 1_000));
    }
  } finally {
    stop.abort();
    await here?.done;
  }
}

function progressLine(p: BackfillProgress, elapsedMs: number, bar: boolean): string {
  const done = p.succeeded + p.failed;
  const width = 30;
  const filled = p.planned ? Math.round((done / p.planned) * width) : width;
  const eta = done > 0 && done < p.planned ? ` ~${formatDuration(Math.round((elapsedMs / done) * (p.planned - done)))} left` : "";
  const text = `${done}/${p.planned} done, ${p.running + p.queued} running, ${p.failed} failed${eta}`;
  return bar ? `[${"#".repeat(filled)}${".".repeat(width - filled)}] ${text}` : text;
}
