import type { Command } from "commander";
import { nowInstant, positiveWholeNumber, wholeNumber } from "../flags.ts";
import { lazy } from "../lazy.ts";

const actions = () => import("../actions/operate.ts");

/** expected, pause, unpause, pools, why: looking at and steering the schedule. */
export function registerOperateCommands(program: Command): void {
  program
    .command("expected <pipeline>")
    .description("the ledger of expected runs: every due interval and whether it ran, is running, was skipped, or is missing")
    .option("--from <date>", "first interval start (date or instant)")
    .option("--to <date>", "end of the range (exclusive)")
    .option("--limit <n>", "without --from: how many intervals back", positiveWholeNumber, 30)
    .option("--json", "print as JSON")
    .option("--now <instant>", "a test clock: answer as if it were this instant (ISO, with Z or an offset; default: $IDEM_NOW, else the system clock)", nowInstant)
    .action(lazy(actions, "expected"));

  program
    .command("pause <pipeline>")
    .description("stop creating runs for the pipeline (audited)")
    .option("--note <text>", "why, for the audit log")
    .option("--stop", "also stop its remote jobs: external tasks waiting on one are skipped and their jobs cancelled")
    .action(lazy(actions, "pause"));
  program
    .command("unpause <pipeline>")
    .description("create runs again, catching up under the run cap (audited)")
    .option("--note <text>", "why, for the audit log")
    .action(lazy(actions, "unpause"));

  const pools = program
    .command("pools")
    .description("pools: slots, slots in use and who holds them")
    .option("--json", "print as JSON")
    .action(lazy(actions, "pools"));
  pools
    .command("set <name>")
    .description("create a pool or change its slots (audited)")
    .requiredOption("--slots <n>", "how many slots", wholeNumber)
    .option("--description <text>", "what it guards")
    .action(lazy(actions, "setPool"));
  pools
    .command("delete <name>")
    .description("delete a pool (audited)")
    .action(lazy(actions, "deletePool"));

  program
    .command("why <run> [task]")
    .description("why a run (or one of its tasks) is not running, in words")
    .action(lazy(actions, "why"));
}

/** trigger, clear, skip, mark, audit: manual actions, every one recorded with who and why. */
export function registerActionCommands(program: Command): void {
  program
    .command("trigger <pipeline>")
    .description("create a manual run for a business date, for the scheduler's workers to run")
    .requiredOption("--date <YYYY-MM-DD>", "the business date")
    .option("--reason <text>", "why")
    .option("--open-frozen <reason>", "run a frozen date anyway, recording why")
    .action(lazy(actions, "trigger"));

  program
    .command("clear <run>")
    .description("run task instances again, keeping their history (try numbers continue)")
    .option("--task <id>", "only this task")
    .option("--downstream", "with --task: and everything downstream of it")
    .option("--upstream", "with --task: and everything upstream of it")
    .option("--failed-only", "only failed and upstream_failed task instances")
    .option("--open-frozen <reason>", "clear a run of a frozen date anyway, recording why")
    .option("--code <same|latest>", "the code it runs again on: same (the run's own version, the default) or latest (the pipeline file as it is now)")
    .option("--reason <text>", "why (required)")
    .action(lazy(actions, "clear"));

  program
    .command("skip <run> <task>")
    .description("skip a task instance on purpose; shown as such everywhere")
    .option("--reason <text>", "why (required)")
    .action(lazy(actions, "skip"));

  program
    .command("mark <run> <task>")
    .description("set a task instance's state by hand; never silent (task[key], or task[glob] for every mapped instance it matches)")
    .requiredOption("--state <state>", "success or failed")
    .option("--reason <text>", "why (required)")
    .action(lazy(actions, "mark"));

  program
    .command("audit")
    .description("who did what, when, why, against which graph version")
    .option("--pipeline <id>", "only this pipeline's")
    .option("--limit <n>", "how many", positiveWholeNumber, 50)
    .option("--json", "print as JSON")
    .action(lazy(actions, "audit"));
}
