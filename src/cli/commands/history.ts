import type { Command } from "commander";
import { UsageError } from "../../core/model/errors.ts";
import { formatHistory, openTarget, readHistory } from "../../data/index.ts";
import { printJson } from "../format.ts";
import { loadProject, type GlobalOptions } from "../project.ts";

/** `idem history <table>`: every write to a table, newest first, like Delta Lake's DESCRIBE HISTORY. */
export function registerHistoryCommand(program: Command): void {
  program
    .command("history <table>")
    .description("what was written to a table, newest first: operation, predicate, rows deleted and written, run, task, try, batch")
    .option("--warehouse <location>", "duckdb:<path>, sqlite:<path> or postgres://... (default: the config's warehouse)")
    .option("--limit <n>", "how many", "20")
    .option("--json", "print as JSON")
    .action(async (table: string, flags: { warehouse?: string; limit: string; json?: boolean }) => {
      const { config } = await loadProject(program.opts<GlobalOptions>());
      const location = flags.warehouse ?? config.warehouse;
      if (!location) throw new UsageError("which warehouse? give --warehouse duckdb:<path>, or set `warehouse` in idem.config.ts");
      const limit = Number(flags.limit);
      if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit ${flags.limit}: expected a whole number >= 1`);
      const target = await openTarget(location);
      try {
        const entries = await readHistory(target, table, { limit });
        if (flags.json) printJson(entries);
        else console.log(entries.length ? formatHistory(entries) : `no writes recorded for ${table}`);
      } finally {
        await target.close();
      }
    });
}
