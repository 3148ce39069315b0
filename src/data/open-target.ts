import { DefinitionError } from "../core/model/errors.ts";
import type { Target } from "./target.ts";

/**
 * Opens a target named by a location: `duckdb:<path>` (or a path ending in .duckdb),
 * `sqlite:<path>` (or .db/.sqlite), or a `postgres://` URL. Only the driver named is loaded.
 */
export async function openTarget(location: string): Promise<Target> {
  if (/^postgres(ql)?:\/\//.test(location)) return (await import("./targets/postgres.ts")).openPostgres({ url: location });
  const duckdb = location.startsWith("duckdb:") ? location.slice("duckdb:".length) : /\.duckdb$/.test(location) ? location : null;
  if (duckdb !== null) return (await import("./targets/duckdb.ts")).openDuckDB(duckdb);
  const sqlite = location.startsWith("sqlite:") ? location.slice("sqlite:".length) : /\.(db|sqlite3?)$/.test(location) ? location : null;
  if (sqlite !== null) return (await import("./targets/sqlite.ts")).openSQLite(sqlite);
  throw new DefinitionError(`warehouse ${JSON.stringify(location)}: expected duckdb:<path>, sqlite:<path> or postgres://...`);
}
