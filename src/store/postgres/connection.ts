import pg from "pg";

/**
 * Where the store lives: the connection settings pg needs, and the schema that holds idem's
 * tables. The schema comes from the `schema` option, else a `?schema=` URL parameter, else a
 * `search_path` in the URL's `options=-c search_path=...`; without any, the server's default
 * (public). Several installations (or test runs) share one database in their own schemas.
 */
export interface ConnectionTarget {
  /** The URL without idem's own `schema` parameter. */
  connectionString: string;
  /** The search_path option to set on every connection, or undefined for the server default. */
  options: string | undefined;
  schema: string;
  /** Whether the schema was named (and is then created by migrate). */
  explicitSchema: boolean;
}

/**
 * Every statement is prepared once per connection and runs with parameters; planning it afresh on
 * each call would cost more than running it. The hot statements are shaped so that one plan fits
 * all values and holds before statistics exist (partial indexes in claiming order, probes driven
 * from the batch's own ids); plans are redone whenever ANALYZE brings new statistics.
 */
const PLAN_CACHE = "-c plan_cache_mode=force_generic_plan";

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

export function resolveTarget(connectionString: string, schema?: string): ConnectionTarget {
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    throw new Error("PostgreSQL connection string is not a URL (expected postgres://user@host:port/database)");
  }
  const fromParam = url.searchParams.get("schema") ?? undefined;
  url.searchParams.delete("schema");
  const options = url.searchParams.get("options") ?? "";
  url.searchParams.delete("options");
  const searchPath = /-c\s*search_path=([^\s]+)/.exec(options);
  const otherOptions = options.replace(/-c\s*search_path=[^\s]+/, "").trim();
  const chosen = schema ?? fromParam ?? searchPath?.[1];
  if (chosen !== undefined && !SCHEMA_NAME.test(chosen)) {
    throw new Error(`schema "${chosen}": use lower-case letters, digits and _ (at most 48), starting with a letter or _`);
  }
  const parts = [otherOptions, chosen ? `-c search_path=${chosen}` : "", PLAN_CACHE].filter((p) => p.length > 0);
  return {
    connectionString: url.toString(),
    options: parts.length > 0 ? parts.join(" ") : undefined,
    schema: chosen ?? "public",
    explicitSchema: chosen !== undefined,
  };
}

/** Epoch milliseconds, counts and ids are BIGINT; all of them fit a double exactly. */
export const TYPES = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === pg.types.builtins.INT8) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as "text");
  },
};

export function clientConfig(target: ConnectionTarget, applicationName: string): pg.ClientConfig {
  return {
    connectionString: target.connectionString,
    options: target.options,
    application_name: applicationName.slice(0, 63),
    types: TYPES,
    // A dead peer (a host gone from the network) is noticed instead of waited on forever.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    connectionTimeoutMillis: 10_000,
  };
}

/** SQLSTATE classes and client errors that mean "this connection is gone", not "this query is wrong". */
export function isConnectionError(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown };
  const code = typeof e?.code === "string" ? e.code : "";
  if (/^(08|57P0)/.test(code)) return true;
  if (["ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND"].includes(code)) return true;
  const message = typeof e?.message === "string" ? e.message : "";
  return /Connection terminated|connection error|not queryable|timeout exceeded when trying to connect/i.test(message);
}

/** Deadlocks and serialisation failures: the server rolled the transaction back; running it again is safe. */
export function isTransientConflict(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === "40P01" || code === "40001";
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
