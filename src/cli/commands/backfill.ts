import type { Command } from "commander";
import { positiveWholeNumber } from "../flags.ts";
import { lazy } from "../lazy.ts";

const actions = () => import("../actions/backfill.ts");

export function registerBackfillCommands(program: Command): void {
  const backfill = program
    .command("backfill")
    .description("plan and run a range of past intervals again (subcommands: pause, resume, cancel)")
    .argument("[pipeline]", "the pipeline")
    .option("--from <date>", "first business date")
    .option("--to <date>", "last business date (inclusive)")
    .option("--reason <text>", "why, recorded with the backfill and its runs")
    .option("--max-active-runs <n>", "runs of this backfill at once", positiveWholeNumber, 4)
    .option("--reprocess <which>", "existing runs to run again: none (only missing intervals), failed, all", "none")
    .option("--backwards", "newest interval first")
    .option("--dry-run", "show the plan and the estimate; change nothing")
    .option("--tasks <regex>", "only the tasks whose id matches")
    .option("--downstream", "with --tasks: also everything downstream of them")
    .option("--open-frozen <reason>", "rewrite frozen dates anyway, recording why")
    .option("--code <same|latest>", "the code the runs it runs again run: latest (the file as it is now, the default) or same (each run's own version); new runs run the latest")
    .option("--no-follow", "return at once instead of following progress")
    .option("--json", "print the plan (or the backfill) as JSON")
    .action(lazy(actions, "backfill"));

  for (const action of ["pause", "resume", "cancel"] as const) {
    backfill
      .command(`${action} <backfill>`)
      .description(`${action} a backfill (audited)`)
      .option("--reason <text>", "why")
      .action(lazy(actions, action));
  }

  program
    .command("backfills")
    .description("list backfills with their progress")
    .option("--pipeline <id>", "only this pipeline's")
    .option("--json", "print as JSON")
    .action(lazy(actions, "backfills"));
}
