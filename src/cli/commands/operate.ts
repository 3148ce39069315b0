import type { Command } from "commander";
import { UsageError } from "../../core/model/errors.ts";
import { formatInstant } from "../../core/time/dates.ts";
import { printJson, table } from "../format.ts";
import { openEngine, type GlobalOptions } from "../project.ts";

type Engine = Awaited<ReturnType<typeof openEngine>>;

/** expected, pause, unpause, pools, why: looking at and steering the schedule. */
export function registerOperateCommands(program: Command): void {
  const withEngine = async (fn: (engine: Engine, actor: string | undefined) => Promise<void>) => {
    const global = program.opts<GlobalOptions>();
    const engine = await openEngine(global);
    try {
      await fn(engine, global.user);
    } finally {
      await engine.store.close();
    }
  };

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
            ["date", "fires at", "status", "run", "note"],
            entries.map((e) => [e.interval.businessDate, formatInstant(e.firesAt, tz), e.status, e.runId, e.note]),
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
