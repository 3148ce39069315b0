import type pg from "pg";
import { decimalParts, type Column, type ColumnType } from "../schema.ts";
import { doubleQuote, ident, identList, joinSql, render, sql, trusted, type Sql, type SqlDialect, type SqlValue } from "../sql.ts";
import type { ErrorExplanation, Row, Target } from "../target.ts";
import { copyFrom } from "./pg-copy.ts";
import { checkedTypeName } from "./type-names.ts";

const dialect: SqlDialect = { quoteIdent: doubleQuote, placeholder: (n) => `$${n}` };

function postgresType(type: ColumnType): string {
  const d = decimalParts(type);
  if (d) return `numeric(${d.precision},${d.scale})`;
  switch (type) {
    case "boolean": return "boolean";
    case "integer": return "integer";
    case "bigint": return "bigint";
    case "double": return "double precision";
    case "date": return "date";
    case "timestamp": return "timestamp";
    default: return "text";
  }
}

const OID = { bool: 16, int8: 20, int2: 21, int4: 23, text: 25, float4: 700, float8: 701, varchar: 1043, date: 1082, timestamp: 1114, timestamptz: 1184, numeric: 1700 };

function columnTypeFromOid(oid: number, modifier: number): ColumnType {
  switch (oid) {
    case OID.bool: return "boolean";
    case OID.int2:
    case OID.int4: return "integer";
    case OID.int8: return "bigint";
    case OID.float4:
    case OID.float8: return "double";
    case OID.date: return "date";
    case OID.timestamp:
    case OID.timestamptz: return "timestamp";
    case OID.numeric:
      // typmod packs precision and scale; -1 means "any", kept as a wide decimal.
      return modifier >= 4 ? `decimal(${((modifier - 4) >> 16) & 0xffff},${(modifier - 4) & 0xffff})` : "decimal(38,10)";
    default: return "text";
  }
}

// pg is imported by openPostgres, so that importing idem/data loads no driver.
let driver: typeof pg | null = null;

// Dates and timestamps stay text: a JS Date would move them into the process's time zone.
const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === OID.date || oid === OID.timestamp || oid === OID.timestamptz) return (value: string) => value;
    if (oid === OID.int8) return (value: string) => (Number.isSafeInteger(Number(value)) ? Number(value) : value);
    return driver!.types.getTypeParser(oid, format as "text");
  },
};

export interface PostgresTarget extends Target {
  readonly dialect: "postgres";
  readonly client: pg.Client;
}

export interface PostgresOptions {
  url: string;
  /** Created when missing and put first on the search path. */
  schema?: string;
}

export async function openPostgres(options: PostgresOptions): Promise<PostgresTarget> {
  driver ??= (await import("pg")).default;
  const client = new driver.Client({ connectionString: options.url, types });
  await client.connect();
  try {
    if (options.schema) {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${doubleQuote(options.schema)}`).catch(ignoreRace);
      await client.query(`SET search_path TO ${doubleQuote(options.schema)}`);
    }
  } catch (error) {
    await client.end();
    throw error;
  }
  const where = options.schema ? `${redact(options.url)} schema ${options.schema}` : redact(options.url);
  return postgresTarget(client, `postgres ${where}`, () => client.end());
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");
}

// Two sessions creating the same object at once: the loser's error means it exists now.
function ignoreRace(error: { code?: string }) {
  if (error.code !== "23505" && error.code !== "42P06" && error.code !== "42P07") throw error;
}

export function postgresTarget(client: pg.Client, label = "postgres", onClose: () => Promise<void> = async () => {}): PostgresTarget {
  let inTransaction = false;
  const run = (statement: Sql) => {
    const { text, params } = render(statement, dialect);
    return client.query(text, params as unknown[]);
  };
  const target: PostgresTarget = {
    dialect: "postgres",
    label,
    client,
    sqlDialect: dialect,
    readsFiles: false,
    async exec(statement) {
      return (await run(statement)).rowCount ?? 0;
    },
    async query(statement) {
      return (await run(statement)).rows as Row[];
    },
    async transaction(fn) {
      if (inTransaction) throw new Error(`${label}: nested transaction`);
      await client.query("BEGIN");
      inTransaction = true;
      try {
        const result = await fn();
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      } finally {
        inTransaction = false;
      }
    },
    sqlType: postgresType,
    async tableColumns(table) {
      const rows = await target.query(sql`
        SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
        FROM pg_attribute a
        WHERE a.attrelid = to_regclass(${doubleQuote(table)}) AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY a.attnum`);
      if (rows.length === 0) return null;
      return rows.map((r) => ({ name: String(r.name), sqlType: checkedTypeName(String(r.type), table) }));
    },
    async createTable(table, columns, options) {
      const defs = joinSql(columns.map((c) => sql`${ident(c.name)} ${trusted(postgresType(c.type))}`));
      await run(sql`CREATE ${trusted(options?.temporary ? "TEMP " : "")}TABLE IF NOT EXISTS ${ident(table)} (${defs})`).catch(ignoreRace);
    },
    async dropTable(table) {
      await run(sql`DROP TABLE IF EXISTS ${ident(table)}`);
    },
    async ensureBookkeeping() {
      await client.query(`CREATE TABLE IF NOT EXISTS _idem_history (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, table_name text NOT NULL, operation text NOT NULL,
        predicate text, rows_deleted bigint NOT NULL, rows_inserted bigint NOT NULL, rows_updated bigint NOT NULL,
        rows_unchanged bigint NOT NULL, rows_written bigint NOT NULL, run_id text, pipeline_id text, task_id text,
        try_number integer, batch_id text, business_date text, frozen_override text, written_at text NOT NULL)`).catch(ignoreRace);
      await client.query(`CREATE TABLE IF NOT EXISTS _idem_batches (
        table_name text NOT NULL, batch_id text NOT NULL, run_id text, written_at text NOT NULL,
        PRIMARY KEY (table_name, batch_id))`).catch(ignoreRace);
    },
    async insertRows(table, columns, rows) {
      if (rows.length === 0) return 0;
      // One text[] parameter per column and unnest: a single statement per batch, far fewer
      // parameters than multi-row VALUES, and the server casts each column once.
      const arrays = columns.map((_c, j) => rows.map((row) => asText(row[j] ?? null)));
      const names = columns.map((_c, j) => `c${j}`);
      const exprs = columns.map((c, j) => target.cast(sql`${ident("u")}.${ident(names[j]!)}`, c.sqlType));
      const unnest = joinSql(arrays.map((a) => sql`${a}::text[]`));
      return target.exec(sql`INSERT INTO ${ident(table)} (${identList(columns.map((c) => c.name))})
        SELECT ${joinSql(exprs)} FROM unnest(${unnest}) AS ${ident("u")}(${identList(names)})`);
    },
    async copyCsv(table, columns, chunks, onChunk) {
      const { text } = render(sql`COPY ${ident(table)} (${identList(columns.map((c) => c.name))}) FROM STDIN WITH (FORMAT csv)`, dialect);
      return copyFrom(client, text, chunks, onChunk);
    },
    // A temporary table has no statistics until analyzed; without them joins are planned blind.
    async analyze(table) {
      await run(sql`ANALYZE ${ident(table)}`);
    },
    async describeQuery(query) {
      const result = await run(sql`SELECT * FROM (${query}) AS ${ident("src")} LIMIT 0`);
      return result.fields.map((f): Column => ({ name: f.name, type: columnTypeFromOid(f.dataTypeID, f.dataTypeModifier) }));
    },
    // A row comparison is exact and about three times faster than md5 of each row's text.
    rowsDiffer(left, right, columns) {
      return sql`ROW(${identList(columns, left)}) IS DISTINCT FROM ROW(${identList(columns, right)})`;
    },
    cast(value, sqlType) {
      return sql`CAST(${value} AS ${trusted(sqlType)})`;
    },
    explainError: explainPostgresError,
    async close() {
      await onClose();
    },
  };
  return target;
}

function asText(value: SqlValue): string | null {
  if (value === null) return null;
  if (typeof value === "boolean") return value ? "true" : "false";
  return String(value);
}

/** SQLSTATE class 22 (data exception) and 23 (integrity constraint) mean the rows are at fault. */
function explainPostgresError(error: unknown): ErrorExplanation | null {
  const e = error as { code?: unknown; message?: unknown; where?: unknown };
  if (typeof e?.code !== "string" || !/^[0-9A-Z]{5}$/.test(e.code) || typeof e.message !== "string") return null;
  const where = typeof e.where === "string" ? ` (${e.where.split("\n")[0]})` : "";
  return { message: `${e.message}${where}`, isData: e.code.startsWith("22") || e.code.startsWith("23") };
}
