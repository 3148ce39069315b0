import type Database from "better-sqlite3";
import { decimalParts, type Column, type ColumnType } from "../schema.ts";
import { doubleQuote, ident, joinSql, render, sql, trusted, type BoundValue, type Sql, type SqlDialect } from "../sql.ts";
import type { ErrorExplanation, Row, Target } from "../target.ts";
import { checkedTypeName } from "./type-names.ts";

const dialect: SqlDialect = { quoteIdent: doubleQuote, placeholder: () => "?" };

// Tables are created STRICT, so a value that is not of the column's type is an error rather than
// being stored as text; STRICT allows only these type names.
function sqliteType(type: ColumnType): string {
  if (decimalParts(type)) return "REAL";
  switch (type) {
    case "boolean":
    case "integer":
    case "bigint":
      return "INTEGER";
    case "double":
      return "REAL";
    default:
      return "TEXT";
  }
}

function columnTypeFromSQLite(declared: string | null): ColumnType {
  const t = (declared ?? "").toUpperCase();
  if (t.includes("INT")) return "bigint";
  if (t.includes("REAL") || t.includes("FLOA") || t.includes("DOUB") || t.includes("NUM") || t.includes("DEC")) return "double";
  return "text";
}

function bindable(value: BoundValue): unknown {
  return typeof value === "boolean" ? (value ? 1 : 0) : value;
}

export interface SQLiteTarget extends Target {
  readonly dialect: "sqlite";
  readonly database: Database.Database;
}

/** Opens (or creates) a SQLite database file in WAL mode, so readers never wait for a load. */
export async function openSQLite(path: string): Promise<SQLiteTarget> {
  // Imported here, so that importing idem/data loads no driver.
  const { openWalDatabase } = await import("../../sqlite/open-wal.ts");
  const db = openWalDatabase(path);
  const prepare = (statement: Sql) => {
    const { text, params } = render(statement, dialect);
    return { stmt: db.prepare(text), params: params.map(bindable) };
  };
  let inTransaction = false;
  const target: SQLiteTarget = {
    dialect: "sqlite",
    label: `sqlite ${path}`,
    database: db,
    sqlDialect: dialect,
    readsFiles: false,
    async exec(statement) {
      const { stmt, params } = prepare(statement);
      if (stmt.reader) {
        stmt.all(...params);
        return 0;
      }
      return stmt.run(...params).changes;
    },
    async query(statement) {
      const { stmt, params } = prepare(statement);
      return stmt.all(...params) as Row[];
    },
    async transaction(fn) {
      if (inTransaction) throw new Error(`sqlite ${path}: nested transaction`);
      // IMMEDIATE takes the write lock up front, so two loaders cannot both read then both write.
      db.exec("BEGIN IMMEDIATE");
      inTransaction = true;
      try {
        const result = await fn();
        db.exec("COMMIT");
        return result;
      } catch (error) {
        if (db.inTransaction) db.exec("ROLLBACK");
        throw error;
      } finally {
        inTransaction = false;
      }
    },
    sqlType: sqliteType,
    async tableColumns(table) {
      const rows = db.prepare("SELECT name, type FROM pragma_table_info(?)").all(table) as { name: string; type: string }[];
      if (rows.length === 0) return null;
      return rows.map((r) => ({ name: r.name, sqlType: checkedTypeName(r.type || "ANY", table) }));
    },
    async createTable(table, columns, options) {
      const defs = joinSql(columns.map((c) => sql`${ident(c.name)} ${trusted(sqliteType(c.type))}`));
      await target.exec(sql`CREATE ${trusted(options?.temporary ? "TEMP " : "")}TABLE IF NOT EXISTS ${ident(table)} (${defs}) STRICT`);
    },
    async dropTable(table) {
      await target.exec(sql`DROP TABLE IF EXISTS ${ident(table)}`);
    },
    async ensureBookkeeping() {
      db.exec(`CREATE TABLE IF NOT EXISTS _idem_history (
        id INTEGER PRIMARY KEY AUTOINCREMENT, table_name TEXT NOT NULL, operation TEXT NOT NULL, predicate TEXT,
        rows_deleted INTEGER NOT NULL, rows_inserted INTEGER NOT NULL, rows_updated INTEGER NOT NULL,
        rows_unchanged INTEGER NOT NULL, rows_written INTEGER NOT NULL, run_id TEXT, pipeline_id TEXT, task_id TEXT,
        try_number INTEGER, batch_id TEXT, business_date TEXT, frozen_override TEXT, written_at TEXT NOT NULL)`);
      db.exec(`CREATE TABLE IF NOT EXISTS _idem_batches (
        table_name TEXT NOT NULL, batch_id TEXT NOT NULL, run_id TEXT, written_at TEXT NOT NULL,
        PRIMARY KEY (table_name, batch_id))`);
    },
    async insertRows(table, columns, rows) {
      if (rows.length === 0) return 0;
      const placeholders = columns.map(() => "?").join(", ");
      const stmt = db.prepare(`INSERT INTO ${doubleQuote(table)} (${columns.map((c) => doubleQuote(c.name)).join(", ")}) VALUES (${placeholders})`);
      let written = 0;
      for (const row of rows) written += stmt.run(...row.map(bindable)).changes;
      return written;
    },
    // SQLite plans these joins on the key without statistics.
    async analyze() {},
    async describeQuery(query) {
      const { stmt } = prepare(sql`SELECT * FROM (${query}) AS ${ident("src")} LIMIT 0`);
      return stmt.columns().map((c): Column => ({ name: c.name, type: columnTypeFromSQLite(c.type) }));
    },
    // IS NOT is SQLite's null-safe "differs"; cheaper than hashing each row in JavaScript.
    rowsDiffer(left, right, columns) {
      return sql`(${joinSql(columns.map((c) => sql`${ident(left)}.${ident(c)} IS NOT ${ident(right)}.${ident(c)}`), " OR ")})`;
    },
    // SQLite's CAST turns "abc" into 0; the STRICT column type does the checking instead.
    cast(value) {
      return value;
    },
    explainError: explainSQLiteError,
    async close() {
      db.close();
    },
  };
  return target;
}

/** A STRICT column refusing a value, or a NOT NULL or CHECK failing, means the rows are at fault. */
function explainSQLiteError(error: unknown): ErrorExplanation | null {
  const e = error as { code?: unknown; message?: unknown };
  if (typeof e?.code !== "string" || !e.code.startsWith("SQLITE_") || typeof e.message !== "string") return null;
  return { message: e.message, isData: e.code.startsWith("SQLITE_CONSTRAINT") || e.code === "SQLITE_MISMATCH" };
}
