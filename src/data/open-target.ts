import { DefinitionError } from "../core/model/errors.ts";
import type { Target } from "./target.ts";
import { openDuckDB } from "./targets/duckdb.ts";
import { openPostgres } from "./targets/postgres.ts";
import { openSQLite } from "./targets/sqlite.ts";

/**
 * Opens a target named by a location: `duckdb:<path>` (or a path ending in .duckdb),
 * `sqlite:<path>` (or .db/.sqlite), or a `postgres://` URL.
 */
export async function openTarget(location: string): Promise<Target> {
  if (/^postgres(ql)?:\/\//.test(location)) return openPostgres({ url: location });
  if (location.startsWith("duckdb:")) return openDuckDB(location.slice("duckdb:".length));
  if (location.startsWith("sqlite:")) return openSQLite(location.slice("sqlite:".length));
  if (/\.duckdb$/.test(location)) return openDuckDB(location);
  if (/\.(db|sqlite3?)$/.test(location)) return openSQLite(location);
  throw new DefinitionError(`warehouse ${JSON.stringify(location)}: expected duckdb:<path>, sqlite:<path> or postgres://...`);
}
