import type { Command } from "commander";
import { positiveWholeNumber } from "../flags.ts";
import { lazy } from "../lazy.ts";

/** `idem history <table-or-dataset>`: every write to a table or a file dataset, newest first, like Delta Lake's DESCRIBE HISTORY. */
export function registerHistoryCommand(program: Command): void {
  program
    .command("history <table-or-dataset>")
    .description("what was written to a warehouse table or a file dataset (a directory of partitions, e.g. lake/orders), newest first: operation, predicate or partition, rows, run, task, try")
    .option("--warehouse <location>", "duckdb:<path>, sqlite:<path> or postgres://... (default: the config's warehouse)")
    .option("--limit <n>", "how many", positiveWholeNumber, 20)
    .option("--json", "print as JSON")
    .action(lazy(() => import("../actions/history.ts"), "history"));
}
