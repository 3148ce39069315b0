import type { Command } from "commander";
import { lazy } from "../lazy.ts";

/** `idem migrate`: moves an installation's state from its SQLite file to PostgreSQL. */
export function registerMigrateCommand(program: Command): void {
  program
    .command("migrate")
    .description("copy the state (runs, attempts, audit, pause state, pools, datasets, backfills, freshness) from SQLite to PostgreSQL")
    .requiredOption("--from <location>", "the SQLite state file: sqlite:.idem/state.db")
    .requiredOption("--to <url>", "the PostgreSQL database: postgres://user@host:port/db (?schema=name for a schema of its own)")
    .option("--force", "replace the state the target already holds")
    .action(lazy(() => import("../actions/migrate.ts"), "migrate"));
}
