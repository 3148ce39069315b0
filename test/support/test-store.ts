import { join } from "node:path";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { Store } from "../../src/store/port.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { dropSchema, freshSchema } from "../process/postgres-support.ts";

/**
 * The state store the engine tests run on: a SQLite file in `dir`, or, when the test project sets
 * IDEM_TEST_ENGINE_STORE=postgres, a fresh schema on the test PostgreSQL. The same engine tests
 * thus prove both adapters. `close` removes what it made.
 */
export async function openTestStore(dir: string): Promise<{ store: Store; close: () => Promise<void> }> {
  if (process.env.IDEM_TEST_ENGINE_STORE === "postgres") {
    const url = process.env.IDEM_TEST_PG_URL;
    if (!url) throw new Error("IDEM_TEST_ENGINE_STORE=postgres needs IDEM_TEST_PG_URL");
    const schema = freshSchema();
    const store = new PostgresStore({ connectionString: url, schema, poolSize: 4 });
    await store.migrate();
    return { store, close: async () => { await store.close(); await dropSchema(url, schema); } };
  }
  const store = new SqliteStore(join(dir, "state.db"));
  await store.migrate();
  return { store, close: () => store.close() };
}
