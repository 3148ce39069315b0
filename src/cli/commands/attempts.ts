import type { Command } from "commander";
import { lazy } from "../lazy.ts";

export function registerAttemptsCommand(program: Command): void {
  program
    .command("attempts <run> <task>")
    .description("every try of a task instance: start, end, the delay before it, how it ended")
    .option("--json", "print as JSON")
    .action(lazy(() => import("../actions/attempts.ts"), "attempts"));
}
