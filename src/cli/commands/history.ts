import type { Command } from "commander";
import { positiveWholeNumber } from "../flags.ts";
import { lazy } from "../lazy.ts";

/** `idem history <table>`: every write to a table, newest first, like Delta Lake's DESCRIBE HISTORY. */
export function registerHistoryCommand(program: Command): void {
  program
    .command("history <table>")
    .description("what was written to a table, newest first: operation, predicate, rows deleted and written, run, task, try, batch")
    .option("--warehouse <location>", "duckdb:<path>, sqlite:<path> or postgres://... (default: the config's warehouse)")
    .option("--limit <n>", "how many", positiveWholeNumber, 20)
    .option("--json", "print as JSON")
    .action(lazy(() => import("../actions/history.ts"), "history"));
}
