import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { DuckDBConnection, DuckDBType } from "@duckdb/node-api";
import { columnTypeFromDuckDB, decimalParts, type Column, type ColumnType } from "../schema.ts";
import { doubleQuote, ident, identList, joinSql, render, sql, trusted, type Sql, type SqlDialect } from "../sql.ts";
import type { ErrorExplanation, Row, Target } from "../target.ts";
import { checkedTypeName } from "./type-names.ts";
import { duckdbBinding } from "./duckdb-params.ts";

// DuckDB's type ids (DuckDBTypeId) BIGINT, UBIGINT, HUGEINT, UHUGEINT, written out so that
// importing idem/data does not load DuckDB: the driver is imported by openDuckDB only.
const WIDE_INTEGERS = new Set<number>([5, 9, 16, 32]);

const dialect: SqlDialect = { quoteIdent: doubleQuote, placeholder: (n) => `$${n}` };

export function duckdbType(type: ColumnType): string {
  const d = decimalParts(type);
  if (d) return `DECIMAL(${d.precision},${d.scale})`;
  switch (type) {
    case "boolean": return "BOOLEAN";
    case "integer": return "INTEGER";
    case "bigint": return "BIGINT";
    case "double": return "DOUBLE";
    case "date": return "DATE";
    case "timestamp": return "TIMESTAMP";
    default: return "VARCHAR";
  }
}

export interface DuckDBTarget extends Target {
  readonly dialect: "duckdb";
  readonly connection: DuckDBConnection;
}

/** Opens (or creates) a DuckDB database file; ":memory:" for a throwaway one. */
export async function openDuckDB(path: string): Promise<DuckDBTarget> {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const { DuckDBInstance } = await import("@duckdb/node-api");
  const instance = await createWaitingForLock(() => DuckDBInstance.create(path));
  const connection = await instance.connect();
  return duckdbTarget(connection, `duckdb ${path}`, () => {
    connection.closeSync();
    instance.closeSync();
  });
}

/**
 * A DuckDB file is open in one process at a time: a second process (another task's host, say)
 * fails at once with "Could not set lock on file". Two tasks on one warehouse are an ordinary
 * thing to schedule, so the second waits its turn (polling, up to LOCK_WAIT_MS) instead of failing
 * its attempt; past that the lock error stands.
 */
const LOCK_WAIT_MS = 60_000;
async function createWaitingForLock<T>(create: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (let pause = 20; ; pause = Math.min(pause * 2, 500)) {
    try {
      return await create();
    } catch (error) {
      if (!/Could not set lock on file/.test(String((error as Error).message)) || Date.now() + pause > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** Wraps a connection the caller already holds; close() then leaves it open unless told otherwise. */
export function duckdbTarget(connection: DuckDBConnection, label = "duckdb", onClose: () => void = () => {}): DuckDBTarget {
  let inTransaction = false;
  const run = async (statement: Sql) => {
    const { text, params } = render(statement, dialect);
    const { values, types } = await duckdbBinding(params);
    return connection.run(text, values, types as DuckDBType[] | undefined);
  };
  const target: DuckDBTarget = {
    dialect: "duckdb",
    label,
    connection,
    sqlDialect: dialect,
    readsFiles: true,
    async exec(statement) {
      return Number((await run(statement)).rowsChanged);
    },
    async query(statement) {
      const { text, params } = render(statement, dialect);
      const { values, types } = await duckdbBinding(params);
      const reader = await connection.runAndReadAll(text, values, types as DuckDBType[] | undefined);
      const rows = reader.getRowObjectsJson() as Row[];
      // Wide integers arrive as text in JSON form; give counts and ids back as numbers when exact.
      const wide = reader.columnNames().filter((_n, i) => WIDE_INTEGERS.has(reader.columnTypes()[i]!.typeId));
      if (wide.length > 0) {
        for (const row of rows) {
          for (const name of wide) {
            const v = row[name];
            if (typeof v === "string" && Number.isSafeInteger(Number(v))) row[name] = Number(v);
          }
        }
      }
      return rows;
    },
    async transaction(fn) {
      if (inTransaction) throw new Error(`${label}: nested transaction`);
      await connection.run("BEGIN TRANSACTION");
      inTransaction = true;
      try {
        const result = await fn();
        await connection.run("COMMIT");
        return result;
      } catch (error) {
        await connection.run("ROLLBACK").catch(() => {});
        throw error;
      } finally {
        inTransaction = false;
      }
    },
    sqlType: duckdbType,
    async tableColumns(table) {
      const rows = await target.query(sql`
        SELECT column_name, data_type, database_name FROM duckdb_columns()
        WHERE table_name = ${table} AND schema_name = current_schema()
          AND database_name IN (current_database(), 'temp')
        ORDER BY database_name = 'temp' DESC, column_index`);
      if (rows.length === 0) return null;
      // A temp table shadows a table of the same name; keep the first database's columns only.
      const first = rows[0]?.database_name;
      return rows.filter((r) => r.database_name === first).map((r) => ({ name: String(r.column_name), sqlType: checkedTypeName(String(r.data_type), table) }));
    },
    async createTable(table, columns, options) {
      const defs = joinSql(columns.map((c) => sql`${ident(c.name)} ${trusted(duckdbType(c.type))}`));
      await run(sql`CREATE ${trusted(options?.temporary ? "TEMP " : "")}TABLE IF NOT EXISTS ${ident(table)} (${defs})`);
    },
    async dropTable(table) {
      await run(sql`DROP TABLE IF EXISTS ${ident(table)}`);
    },
    async ensureBookkeeping() {
      await connection.run("CREATE SEQUENCE IF NOT EXISTS _idem_history_id");
      await connection.run(`CREATE TABLE IF NOT EXISTS _idem_history (
        id BIGINT PRIMARY KEY DEFAULT nextval('_idem_history_id'), table_name VARCHAR NOT NULL,
        operation VARCHAR NOT NULL, predicate VARCHAR, rows_deleted BIGINT NOT NULL, rows_inserted BIGINT NOT NULL,
        rows_updated BIGINT NOT NULL, rows_unchanged BIGINT NOT NULL, rows_written BIGINT NOT NULL,
        run_id VARCHAR, pipeline_id VARCHAR, task_id VARCHAR, try_number INTEGER, batch_id VARCHAR,
        business_date VARCHAR, frozen_override VARCHAR, written_at VARCHAR NOT NULL)`);
      await connection.run(`CREATE TABLE IF NOT EXISTS _idem_batches (
        table_name VARCHAR NOT NULL, batch_id VARCHAR NOT NULL, run_id VARCHAR, written_at VARCHAR NOT NULL,
        PRIMARY KEY (table_name, batch_id))`);
    },
    async insertRows(table, columns, rows) {
      if (rows.length === 0) return 0;
      const per = Math.max(1, Math.floor(2000 / columns.length));
      let written = 0;
      for (let i = 0; i < rows.length; i += per) {
        const values = rows.slice(i, i + per).map((row) => sql`(${joinSql(columns.map((c, j) => target.cast(sql`${row[j] ?? null}`, c.sqlType)))})`);
        written += await target.exec(sql`INSERT INTO ${ident(table)} (${identList(columns.map((c) => c.name))}) VALUES ${joinSql(values)}`);
      }
      return written;
    },
    async insertFromFile(table, columns, select) {
      const exprs = columns.map((c) => target.cast(sql`${ident("src")}.${ident(c.name)}`, c.sqlType));
      return target.exec(sql`INSERT INTO ${ident(table)} (${identList(columns.map((c) => c.name))}) SELECT ${joinSql(exprs)} FROM (${select}) AS ${ident("src")}`);
    },
    // DuckDB keeps its statistics up to date as rows are appended.
    async analyze() {},
    async describeQuery(query) {
      const rows = await target.query(sql`DESCRIBE ${query}`);
      return rows.map((r): Column => ({ name: String(r.column_name), type: columnTypeFromDuckDB(String(r.column_type)) }));
    },
    // DuckDB's 64-bit hash of the values is cheaper than comparing them column by column.
    rowsDiffer(left, right, columns) {
      return sql`hash(${identList(columns, left)}) <> hash(${identList(columns, right)})`;
    },
    cast(value, sqlType) {
      return sql`CAST(${value} AS ${trusted(sqlType)})`;
    },
    explainError: explainDuckDBError,
    async close() {
      onClose();
    },
  };
  return target;
}

/** DuckDB's errors start with their class; conversion and CSV input errors mean bad data. */
export function explainDuckDBError(error: unknown): ErrorExplanation | null {
  const text = error instanceof Error ? error.message : null;
  const m = text ? /^(Conversion|Invalid Input|Constraint|Out of Range|IO|Binder|Parser|Catalog) Error: ([^\n]*)/.exec(text) : null;
  if (!m) return null;
  return { message: `${m[1]} Error: ${m[2]}`, isData: m[1] === "Conversion" || m[1] === "Invalid Input" || m[1] === "Constraint" || m[1] === "Out of Range" };
}
