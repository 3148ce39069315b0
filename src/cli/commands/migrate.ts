import type { Command } from "commander";
import { migrateState } from "../../store/migrate-state.ts";
import { table } from "../format.ts";

/** `idem migrate`: moves an installation's state from its SQLite file to PostgreSQL. */
export function registerMigrateCommand(program: Command): void {
  program
    .command("migrate")
    .description("copy the state (runs, attempts, audit, pause state, pools, datasets, backfills, freshness) from SQLite to PostgreSQL")
    .requiredOption("--from <location>", "the SQLite state file: sqlite:.idem/state.db")
    .requiredOption("--to <url>", "the PostgreSQL database: postgres://user@host:port/db (?schema=name for a schema of its own)")
    .option("--force", "replace the state the target already holds")
    .action(async (flags: { from: string; to: string; force?: boolean }) => {
      const copied = await migrateState({ from: flags.from, to: flags.to, force: flags.force === true });
      console.log(table(["table", "rows"], [...copied].map(([name, rows]) => [name, rows])));
      const total = [...copied.values()].reduce((a, b) => a + b, 0);
      console.log(`\ncopied ${total} row(s) in one transaction; point the project at the new store with state: "${redact(flags.to)}" or IDEM_STATE_URL`);
    });
}

/** The URL as it may be printed: without a password. */
function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "***";
  return u.toString();
}
