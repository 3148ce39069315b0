import { randomBytes } from "node:crypto";
import pg from "pg";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";

/**
 * The PostgreSQL server of the state-store tests, from IDEM_TEST_PG_URL. Without it these tests
 * are skipped with the reason printed, except under CI=true, where a missing server fails them.
 */
export function testPostgresUrl(): string | null {
  const url = process.env.IDEM_TEST_PG_URL?.trim() || null;
  if (url) return url;
  const reason = 'IDEM_TEST_PG_URL is not set (start a server with: eval "$(bash .ci/postgres.sh start)")';
  if (process.env.CI === "true") throw new Error(`PostgreSQL state-store tests cannot run under CI=true: ${reason}`);
  console.warn(`skipping PostgreSQL state-store tests: ${reason}`);
  return null;
}

/** A schema name no other test (or test file) uses. */
export function freshSchema(): string {
  return `idem_t_${randomBytes(5).toString("hex")}`;
}

/** The URL of a schema of its own, as a project's config or IDEM_STATE_URL would name it. */
export function schemaUrl(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set("schema", schema);
  return u.toString();
}

export async function withAdmin<T>(url: string, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end();
  }
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  await withAdmin(url, (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** Rows of a query against one schema, as an auditor would read them. */
export async function queryPg<T = Record<string, any>>(url: string, schema: string, sql: string, params: unknown[] = []): Promise<T[]> {
  return withAdmin(url, async (c) => {
    await c.query(`SET search_path TO "${schema}"`);
    try {
      return (await c.query(sql, params)).rows as T[];
    } catch (error) {
      if ((error as { code?: string }).code === "42P01") return []; // not migrated yet
      throw error;
    }
  });
}

/** A migrated store in a schema of its own. */
export async function openPgStore(url: string, schema = freshSchema(), poolSize?: number): Promise<PostgresStore> {
  const store = new PostgresStore({ connectionString: url, schema, poolSize });
  await store.migrate();
  return store;
}

/**
 * A TCP relay in front of the server that can be cut: every connection through it drops and
 * new ones are refused until it is restored, as when the database host reboots or the network
 * between a worker and the database fails.
 */
export class CuttableRelay {
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<import("node:net").Socket>();
  #server: import("node:net").Server | null = null;
  port = 0;

  constructor(url: string) {
    const u = new URL(url);
    this.#target = { host: u.hostname, port: Number(u.port || 5432) };
  }

  /** The server's URL as seen through the relay. */
  url(url: string): string {
    const u = new URL(url);
    u.hostname = "127.0.0.1";
    u.port = String(this.port);
    return u.toString();
  }

  async open(): Promise<void> {
    const net = await import("node:net");
    const server = net.createServer((client) => {
      const upstream = net.connect(this.#target.port, this.#target.host);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on("close", () => this.#sockets.delete(s));
        s.on("error", () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.port = (server.address() as import("node:net").AddressInfo).port;
    this.#server = server;
  }

  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  async close(): Promise<void> {
    await this.cut();
  }
}
