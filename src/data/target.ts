import type { Column, ColumnType } from "./schema.ts";
import type { Sql, SqlDialect, SqlValue } from "./sql.ts";

export type Row = Record<string, unknown>;

/** A column as the target's own catalog reports it. `sqlType` is the target's type name. */
export interface TableColumn {
  name: string;
  sqlType: string;
}

/**
 * What the loaders need from a SQL target, and nothing more. The loader logic is written once
 * against this; each dialect's quirks live in its adapter file.
 */
export interface Target {
  readonly dialect: "duckdb" | "sqlite" | "postgres";
  /** For messages: the kind of target and where it is. */
  readonly label: string;
  readonly sqlDialect: SqlDialect;
  /** True when the target's SQL can read CSV, JSON and Parquet files itself (DuckDB). */
  readonly readsFiles: boolean;
  /** Runs a statement; resolves to the number of rows it changed. */
  exec(statement: Sql): Promise<number>;
  query(statement: Sql): Promise<Row[]>;
  /** Runs fn inside one transaction: commit when it resolves, roll back when it throws. */
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  sqlType(type: ColumnType): string;
  /** The table's columns in order, or null when it does not exist. */
  tableColumns(table: string): Promise<TableColumn[] | null>;
  createTable(table: string, columns: readonly Column[], options?: { temporary?: boolean }): Promise<void>;
  dropTable(table: string): Promise<void>;
  /** Creates _idem_history and _idem_batches when missing. */
  ensureBookkeeping(): Promise<void>;
  /** Inserts one batch of rows whose values are in the order of `columns`. */
  insertRows(table: string, columns: readonly TableColumn[], rows: readonly (readonly SqlValue[])[]): Promise<number>;
  /** A target that reads files itself (DuckDB) inserts straight from them; others get rows moved in. */
  insertFromFile?(table: string, columns: readonly TableColumn[], select: Sql): Promise<number>;
  /**
   * A bulk path for rows as CSV text (header-less, empty unquoted field = NULL), where the target
   * has one (PostgreSQL's COPY); resolves to the rows loaded.
   */
  copyCsv?(table: string, columns: readonly TableColumn[], chunks: AsyncIterable<Buffer>, onChunk?: (chunk: Buffer) => Promise<void> | void): Promise<number>;
  /** Refreshes a freshly loaded table's statistics where the planner needs them. */
  analyze(table: string): Promise<void>;
  /** The source's columns for a query run on this target. */
  describeQuery(query: Sql): Promise<Column[]>;
  /**
   * A condition true when row `left` and row `right` differ in any of the columns, with NULL
   * equal to NULL: a row hash comparison or a null-safe row comparison, whichever the target
   * does faster. A merge uses it so unchanged rows are not rewritten.
   */
  rowsDiffer(left: string, right: string, columns: readonly string[]): Sql;
  /** An expression casting `value` to a column's type; the type comes from the catalog. */
  cast(value: Sql, sqlType: string): Sql;
  /**
   * Reads one of this target's errors: its first line, with the row or column it names when the
   * driver says, and whether the data is at fault (a value that does not parse or fit), which
   * makes it a data error that is not retried. Null for errors it does not recognise.
   */
  explainError(error: unknown): ErrorExplanation | null;
  close(): Promise<void>;
}

export interface ErrorExplanation {
  message: string;
  isData: boolean;
}

declare module "../core/pipeline/types.ts" {
  /** What `ctx.connection(name)` gives task code: a whole target. */
  interface TaskConnection extends Target {}
}
