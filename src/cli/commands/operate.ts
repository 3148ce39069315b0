import type { Command } from "commander";
import { UsageError } from "../../core/model/errors.ts";
import { formatInstant } from "../../core/time/dates.ts";
import { isoTime, printJson, restated, table } from "../format.ts";
import { engineAction, type ProjectEngine } from "../project.ts";



/** expected, pause, unpause, pools, why: looking at and steering the schedule. */
export function registerOperateCommands(program: Command): void {
  const withEngine = engineAction(program);

  program
    .command("expected <pipeline>")
    .description("the ledger of expected runs: every due interval and whether it ran, is running, was skipped, or is missing")
    .option("--from <date>", "first interval start (date or instant)")
    .option("--to <date>", "end of the range (exclusive)")
    .option("--limit <n>", "without --from: how many intervals back", "30")
    .option("--json", "print as JSON")
    .action((pipelineId: string, options: { from?: string; to?: string; limit: string; json?: boolean }) =>
      withEngine(async (engine) => {
        const entries = await engine.expected(pipelineId, { from: options.from, to: options.to, limit: positive(options.limit, "--limit") });
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
      }),
    );

  for (const paused of [true, false]) {
    program
      .command(`${paused ? "pause" : "unpause"} <pipeline>`)
      .description(paused ? "stop creating runs for the pipeline (audited)" : "create runs again, catching up under the run cap (audited)")
      .option("--note <text>", "why, for the audit log")
      .action((pipelineId: string, options: { note?: string }) =>
        withEngine(async (engine, actor) => {
          const state = paused
            ? await engine.pause(pipelineId, { note: options.note, actor })
            : await engine.unpause(pipelineId, { note: options.note, actor });
          console.log(`${pipelineId} ${state.paused ? "paused" : "unpaused"}${options.note ? `: ${options.note}` : ""}`);
        }),
      );
  }

  const pools = program
    .command("pools")
    .description("pools: slots, slots in use and who holds them")
    .option("--json", "print as JSON")
    .action((options: { json?: boolean }) =>
      withEngine(async (engine) => {
        const list = await engine.pools();
        if (options.json) return printJson(list);
        if (list.length === 0) return console.log("no pools (create one: idem pools set NAME --slots N)");
        console.log(
          table(
            ["pool", "slots", "used", "held by"],
            list.map((p) => [p.name, p.slots, p.used, p.holders.map((h) => `${h.runId} ${h.taskId} (${h.slots})`).join(", ")]),
          ),
        );
      }),
    );
  pools
    .command("set <name>")
    .description("create a pool or change its slots (audited)")
    .requiredOption("--slots <n>", "how many slots")
    .option("--description <text>", "what it guards")
    .action((name: string, options: { slots: string; description?: string }) =>
      withEngine(async (engine, actor) => {
        await engine.setPool(name, positive(options.slots, "--slots", 0), { description: options.description, actor });
        console.log(`pool ${name}: ${options.slots} slot(s)`);
      }),
    );
  pools
    .command("delete <name>")
    .description("delete a pool (audited)")
    .action((name: string) =>
      withEngine(async (engine, actor) => {
        await engine.deletePool(name, { actor });
        console.log(`pool ${name} deleted`);
      }),
    );

  program
    .command("why <run> [task]")
    .description("why a run (or one of its tasks) is not running, in words")
    .action((runId: string, taskId: string | undefined) =>
      withEngine(async (engine) => {
        for (const line of await engine.why(runId, taskId)) console.log(line);
      }),
    );
}

function positive(text: string, flag: string, min = 1): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${flag} ${text}: expected a whole number >= ${min}`);
  return n;
}

/** trigger, clear, skip, mark, audit: manual actions, every one recorded with who and why. */
export function registerActionCommands(program: Command): void {
  const withEngine = engineAction(program);
  const needReason = (reason: string | undefined) => {
    if (!reason?.trim()) throw new UsageError('give --reason "...": manual actions are audited');
    return reason;
  };

  program
    .command("trigger <pipeline>")
    .description("create a manual run for a business date, for the scheduler's workers to run")
    .requiredOption("--date <YYYY-MM-DD>", "the business date")
    .option("--reason <text>", "why")
    .option("--open-frozen <reason>", "run a frozen date anyway, recording why")
    .action((pipelineId: string, flags: { date: string; reason?: string; openFrozen?: string }) =>
      withEngine(async (engine, actor) => {
        const run = await engine.trigger(pipelineId, flags.date, { actor, reason: flags.reason, openFrozen: flags.openFrozen });
        console.log(`run ${run.runId} created (queued)`);
      }),
    );

  program
    .command("clear <run>")
    .description("run task instances again, keeping their history (try numbers continue)")
    .option("--task <id>", "only this task")
    .option("--downstream", "with --task: and everything downstream of it")
    .option("--upstream", "with --task: and everything upstream of it")
    .option("--failed-only", "only failed and upstream_failed task instances")
    .option("--reason <text>", "why (required)")
    .action((runId: string, flags: { task?: string; downstream?: boolean; upstream?: boolean; failedOnly?: boolean; reason?: string }) =>
      withEngine(async (engine, actor) => {
        const tasks = await engine.clear(runId, { taskId: flags.task, downstream: flags.downstream, upstream: flags.upstream, failedOnly: flags.failedOnly, reason: needReason(flags.reason), actor });
        console.log(`cleared ${runId}: ${tasks.filter((t) => t.state === "queued" || t.state === "scheduled").map((t) => t.taskId).join(", ")}`);
      }),
    );

  program
    .command("skip <run> <task>")
    .description("skip a task instance on purpose; shown as such everywhere")
    .option("--reason <text>", "why (required)")
    .action((runId: string, taskId: string, flags: { reason?: string }) =>
      withEngine(async (engine, actor) => {
        const ti = await engine.skip(runId, taskId, { reason: needReason(flags.reason), actor });
        console.log(`${runId} ${taskId}: skipped (${ti.reason})`);
      }),
    );

  program
    .command("mark <run> <task>")
    .description("set a task instance's state by hand; never silent")
    .requiredOption("--state <state>", "success or failed")
    .option("--reason <text>", "why (required)")
    .action((runId: string, taskId: string, flags: { state: string; reason?: string }) =>
      withEngine(async (engine, actor) => {
        if (flags.state !== "success" && flags.state !== "failed") throw new UsageError(`--state ${flags.state}: expected success or failed`);
        const ti = await engine.mark(runId, taskId, { state: flags.state, reason: needReason(flags.reason), actor });
        console.log(`${runId} ${taskId}: ${ti.state}`);
      }),
    );

  program
    .command("audit")
    .description("who did what, when, why, against which graph version")
    .option("--pipeline <id>", "only this pipeline's")
    .option("--limit <n>", "how many", "50")
    .option("--json", "print as JSON")
    .action((flags: { pipeline?: string; limit: string; json?: boolean }) =>
      withEngine(async (engine) => {
        const entries = await engine.audit({ pipelineId: flags.pipeline, limit: positive(flags.limit, "--limit") });
        if (flags.json) return printJson(entries);
        if (entries.length === 0) return console.log("no manual actions recorded");
        console.log(
          table(
            ["when", "who", "action", "pipeline", "run", "task", "why", "version"],
            entries.map((e) => [isoTime(e.at), e.actor, e.action, e.pipelineId, e.runId, e.taskId, e.reason, e.graphVersion]),
          ),
        );
      }),
    );
}
