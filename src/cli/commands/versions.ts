import type { Command } from "commander";
import { positiveWholeNumber, wholeNumber } from "../flags.ts";
import { lazy } from "../lazy.ts";

export function registerVersionsCommand(program: Command): void {
  program
    .command("versions <pipeline>")
    .description("the pipeline's code versions, oldest first: when each was recorded and first ran, by whom, and the runs pinned to it")
    .option("--collect", "remove the bundles no run, window or retention rule needs (audited)")
    .option("--keep-newest <n>", "with --collect: the newest versions always kept (default 3)", positiveWholeNumber)
    .option("--keep-days <n>", "with --collect: versions recorded, and versions of runs created or ended, within this many days are kept (default 30)", wholeNumber)
    .option("--reason <text>", "why, for the audit log")
    .option("--json", "print as JSON")
    .action(lazy(() => import("../actions/versions.ts"), "versions"));
}
