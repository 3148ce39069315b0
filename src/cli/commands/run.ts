import type { Command } from "commander";
import { collect, nowInstant, positiveWholeNumber } from "../flags.ts";
import { lazy } from "../lazy.ts";

export function registerRunCommand(program: Command): void {
  program
    .command("run <pipeline>")
    .description("run a pipeline for one interval now, in this process (again, if it ran before)")
    .option("--date <YYYY-MM-DD>", "the business date")
    .option("--start <instant>", "interval start, for schedules that are not daily")
    .option("--end <instant>", "interval end, with --start")
    .option("-p, --param <key=value>", "override a pipeline param for this run (repeatable)", collect, [])
    .option("--reason <text>", "why, for the audit log")
    .option("--code <same|latest>", "a run that exists runs again on: same (its own code version, the default) or latest (the file as it is now)")
    .option("--concurrency <n>", "task instances of this run that may run at once", positiveWholeNumber)
    .option("--json", "print the finished run as JSON")
    .option("--now <instant>", "a test clock: run as if it were this instant, the clock running on from it (ISO, with Z or an offset; default: $IDEM_NOW, else the system clock); what is recorded says so", nowInstant)
    .action(lazy(() => import("../actions/run.ts"), "run"));
}
