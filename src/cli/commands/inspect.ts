import type { Command } from "commander";
import { nowInstant, positiveWholeNumber, wholeNumber } from "../flags.ts";
import { lazy } from "../lazy.ts";

const actions = () => import("../actions/inspect.ts");

/** Read-only commands: runs, tasks, logs, next. */
export function registerInspectCommands(program: Command): void {
  program
    .command("runs <pipeline>")
    .description("list a pipeline's runs, newest interval first")
    .option("--limit <n>", "how many", positiveWholeNumber, 50)
    .option("--json", "print as JSON")
    .action(lazy(actions, "runs"));

  program
    .command("tasks <run>")
    .description("the tasks of a run, with their state and last error (a mapped task as one row counting its instances by state); --mapped: a mapped task's instances by key")
    .option("--mapped <task>", "list this mapped task's instances by key, a page at a time")
    .option("--after <key>", "with --mapped: the keys after this one (the last key of the page before)")
    .option("--prefix <text>", "with --mapped: only keys starting with this")
    .option("--state <state>", "with --mapped: only instances in this state")
    .option("--limit <n>", "with --mapped: how many", positiveWholeNumber, 100)
    .option("--json", "print as JSON")
    .action(lazy(actions, "tasks"));

  program
    .command("logs <run> <task>")
    .description("print the log of a task's latest attempt (or --try N), streamed")
    .option("--try <n>", "which try", positiveWholeNumber)
    .option("--tail <n>", "only the last N lines", wholeNumber)
    .option("-f, --follow", "keep printing while the attempt runs")
    .action(lazy(actions, "logs"));

  program
    .command("next <pipeline>")
    .description("preview the next runs the schedule will create")
    .option("-n, --count <n>", "how many", positiveWholeNumber, 5)
    .option("--json", "print as JSON")
    .option("--now <instant>", "a test clock: answer as if it were this instant (ISO, with Z or an offset; default: $IDEM_NOW, else the system clock)", nowInstant)
    .action(lazy(actions, "next"));
}
