import type { Command } from "commander";
import { lazy } from "../lazy.ts";

export function registerVersionsCommand(program: Command): void {
  program
    .command("versions <pipeline>")
    .description("the pipeline's code versions, oldest first: when each was recorded and first ran, by whom, and the runs pinned to it")
    .option("--json", "print as JSON")
    .action(lazy(() => import("../actions/versions.ts"), "versions"));
}
