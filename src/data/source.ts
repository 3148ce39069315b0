import type { SchemaInput } from "./schema.ts";
import type { Sql, SqlValue } from "./sql.ts";
import type { Target } from "./target.ts";

interface FileSourceBase {
  /** Declared types for the file's columns; without them DuckDB's detection decides. */
  columns?: SchemaInput;
  /** Columns with one value for every row, e.g. `{ order_date: ctx.businessDate }`. */
  constants?: Readonly<Record<string, SqlValue>>;
}

export interface CsvSource extends FileSourceBase {
  csv: string;
  header?: boolean;
  delimiter?: string;
}
export interface JsonSource extends FileSourceBase {
  json: string;
}
export interface ParquetSource extends FileSourceBase {
  parquet: string;
}
export type FileSource = CsvSource | JsonSource | ParquetSource;

/** A query built with the `sql` tag; it runs on `from` (another target) or on the target itself. */
export interface QuerySource {
  sql: Sql;
  from?: Target;
  constants?: Readonly<Record<string, SqlValue>>;
}

export interface RowsSource {
  rows: readonly Readonly<Record<string, unknown>>[];
  columns?: SchemaInput;
  constants?: Readonly<Record<string, SqlValue>>;
}

export type Source = FileSource | QuerySource | RowsSource;

export function isFileSource(source: Source): source is FileSource {
  return "csv" in source || "json" in source || "parquet" in source;
}

export function filePath(source: FileSource): string {
  return "csv" in source ? source.csv : "json" in source ? source.json : source.parquet;
}

export function describeSource(source: Source): string {
  if ("csv" in source) return `csv ${source.csv}`;
  if ("json" in source) return `json ${source.json}`;
  if ("parquet" in source) return `parquet ${source.parquet}`;
  if ("rows" in source) return `${source.rows.length} rows`;
  return source.from ? `a query on ${source.from.label}` : "a query";
}
