import { isPostgresUrl, sqlitePath } from "./location.ts";
import type { Store } from "./port.ts";

/**
 * The store a location names: a postgres:// or postgresql:// URL (with ?schema=name for a
 * schema of its own) opens PostgreSQL; anything else is a SQLite file path, with or without a
 * `sqlite:` prefix. Only the adapter named is imported, so a SQLite project never loads pg.
 * The caller migrates and closes it.
 */
export async function openStore(location: string, options: { busyTimeoutMs?: number } = {}): Promise<Store> {
  if (isPostgresUrl(location)) {
    const { PostgresStore } = await import("./postgres/postgres-store.ts");
    return new PostgresStore({ connectionString: location });
  }
  const { SqliteStore } = await import("./sqlite/sqlite-store.ts");
  return new SqliteStore(sqlitePath(location), options);
}
