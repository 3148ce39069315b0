import type { Store } from "./port.ts";
import { isPostgresUrl } from "./postgres/connection.ts";
import { PostgresStore } from "./postgres/postgres-store.ts";
import { SqliteStore } from "./sqlite/sqlite-store.ts";

/**
 * The store a location names: a postgres:// or postgresql:// URL (with ?schema=name for a
 * schema of its own) opens PostgreSQL; anything else is a SQLite file path, with or without a
 * `sqlite:` prefix. The caller migrates and closes it.
 */
export function openStore(location: string, options: { busyTimeoutMs?: number } = {}): Store {
  if (isPostgresUrl(location)) return new PostgresStore({ connectionString: location });
  return new SqliteStore(sqlitePath(location), options);
}

/** "sqlite:.idem/state.db" and "sqlite:///abs/state.db" name files; a bare path is one already. */
export function sqlitePath(location: string): string {
  if (!/^sqlite:/i.test(location)) return location;
  const rest = location.slice("sqlite:".length);
  return rest.startsWith("//") ? rest.slice(2) : rest;
}
