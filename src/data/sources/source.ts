import { DefinitionError } from "../../core/model/errors.ts";
import type { SchemaInput } from "../schema.ts";
import type { Sql, SqlValue } from "../sql.ts";
import type { Target } from "../target.ts";

// What a pipeline author writes: one key says what the source is (`{ csv: "orders.csv" }`,
// `{ sql: sql\`...\`, from }`, `{ rows: [...] }`).

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

// What the data plane works with: the author's source read once, tagged by its kind, defaults filled in.

type Constants = Readonly<Record<string, SqlValue>>;

export interface CsvSpec {
  kind: "csv";
  path: string;
  header: boolean;
  delimiter: string;
  columns?: SchemaInput;
  constants: Constants;
}
export interface JsonSpec {
  kind: "json";
  path: string;
  columns?: SchemaInput;
  constants: Constants;
}
export interface ParquetSpec {
  kind: "parquet";
  path: string;
  columns?: SchemaInput;
  constants: Constants;
}
export type FileSpec = CsvSpec | JsonSpec | ParquetSpec;
export interface QuerySpec {
  kind: "query";
  sql: Sql;
  from?: Target;
  constants: Constants;
}
export interface RowsSpec {
  kind: "rows";
  rows: readonly Readonly<Record<string, unknown>>[];
  columns?: SchemaInput;
  constants: Constants;
}

/** A source as the data plane reads it: one tagged type, made from the author's by `sourceSpec`. */
export type SourceSpec = FileSpec | QuerySpec | RowsSpec;

const KINDS = ["csv", "json", "parquet", "sql", "rows"] as const;
const KEYS: Record<(typeof KINDS)[number], readonly string[]> = {
  csv: ["csv", "header", "delimiter", "columns", "constants"],
  json: ["json", "columns", "constants"],
  parquet: ["parquet", "columns", "constants"],
  sql: ["sql", "from", "constants"],
  rows: ["rows", "columns", "constants"],
};
const SHAPES = "{ csv }, { json }, { parquet }, { sql } or { rows }";

/**
 * The author's source as one tagged value, checked once: exactly one of csv, json, parquet,
 * sql and rows, no key that kind does not take, values of the right type. `where` names the
 * load in the error (the table, the file).
 */
export function sourceSpec(source: Source, where: string): SourceSpec {
  const bad = (message: string) => new DefinitionError(`${where}: source ${message}`);
  if (!source || typeof source !== "object" || Array.isArray(source)) throw bad(`must be ${SHAPES}`);
  const given = KINDS.filter((k) => k in source);
  if (given.length !== 1) throw bad(given.length === 0 ? `must be ${SHAPES}` : `has ${given.join(" and ")}: give one of them`);
  const kind = given[0]!;
  const badKind = (message: string) => bad(`${kind}: ${message}`);
  const unknown = Object.keys(source).find((k) => !KEYS[kind].includes(k));
  if (unknown !== undefined) throw badKind(`unknown key ${JSON.stringify(unknown)} (${KEYS[kind].join(", ")})`);
  const s = source as Partial<CsvSource & JsonSource & ParquetSource & QuerySource & RowsSource>;
  const constants = s.constants ?? {};
  if (typeof constants !== "object" || constants === null || Array.isArray(constants)) throw badKind("constants: expected { column: value }");
  const columns = s.columns === undefined ? {} : { columns: s.columns };
  const path = (value: unknown) => {
    if (typeof value !== "string" || value === "") throw badKind("expected a file path");
    return value;
  };
  switch (kind) {
    case "csv": {
      if (s.header !== undefined && typeof s.header !== "boolean") throw badKind("header: expected true or false");
      if (s.delimiter !== undefined && (typeof s.delimiter !== "string" || s.delimiter === "")) throw badKind("delimiter: expected a character");
      return { kind, path: path(s.csv), header: s.header ?? true, delimiter: s.delimiter ?? ",", ...columns, constants };
    }
    case "json":
      return { kind, path: path(s.json), ...columns, constants };
    case "parquet":
      return { kind, path: path(s.parquet), ...columns, constants };
    case "sql":
      if (!s.sql || typeof s.sql !== "object" || !Array.isArray(s.sql.strings)) throw badKind("expected a query built with the sql tag");
      return { kind: "query", sql: s.sql, ...(s.from ? { from: s.from } : {}), constants };
    case "rows":
      if (!Array.isArray(s.rows)) throw badKind("expected a list of rows");
      return { kind: "rows", rows: s.rows, ...columns, constants };
  }
}

export function isFileSpec(source: SourceSpec): source is FileSpec {
  return source.kind === "csv" || source.kind === "json" || source.kind === "parquet";
}

export function describeSource(source: SourceSpec): string {
  switch (source.kind) {
    case "csv":
    case "json":
    case "parquet":
      return `${source.kind} ${source.path}`;
    case "rows":
      return `${source.rows.length} rows`;
    case "query":
      return source.from ? `a query on ${source.from.label}` : "a query";
  }
}

/** Told how many rows a load has moved so far, after each batch. */
export type RowsProgress = (rowsSoFar: number) => void | Promise<void>;
