import { DefinitionError } from "../core/model/errors.ts";
import type { SqlValue } from "./sql.ts";

/**
 * The column types a declared schema may use. A closed list, so every target can map each one to
 * its own type name and a type name never comes from user text.
 */
export type ColumnType =
  | "boolean"
  | "integer"
  | "bigint"
  | "double"
  | "text"
  | "date"
  | "timestamp"
  | `decimal(${number},${number})`;

export interface Column {
  name: string;
  type: ColumnType;
}

/** `{ order_id: "bigint", amount: "decimal(12,2)" }` or a list of columns; order is kept. */
export type SchemaInput = Readonly<Record<string, ColumnType>> | readonly Column[];

const SIMPLE = new Set(["boolean", "integer", "bigint", "double", "text", "date", "timestamp"]);
const DECIMAL = /^decimal\((\d{1,2}),(\d{1,2})\)$/;

export function parseColumnType(text: string, where: string): ColumnType {
  const t = text.trim().toLowerCase().replaceAll(" ", "");
  if (SIMPLE.has(t)) return t as ColumnType;
  const m = DECIMAL.exec(t);
  if (m && Number(m[1]) >= 1 && Number(m[1]) <= 38 && Number(m[2]) <= Number(m[1])) return t as ColumnType;
  throw new DefinitionError(`${where}: unknown column type ${JSON.stringify(text)} (expected boolean, integer, bigint, double, text, date, timestamp or decimal(p,s))`);
}

export function decimalParts(type: ColumnType): { precision: number; scale: number } | null {
  const m = DECIMAL.exec(type);
  return m ? { precision: Number(m[1]), scale: Number(m[2]) } : null;
}

export function normalizeSchema(input: SchemaInput, where: string): Column[] {
  const columns = Array.isArray(input)
    ? (input as readonly Column[]).map((c) => ({ name: c.name, type: parseColumnType(c.type, `${where}, column ${c.name}`) }))
    : Object.entries(input as Record<string, ColumnType>).map(([name, type]) => ({ name, type: parseColumnType(type, `${where}, column ${name}`) }));
  if (columns.length === 0) throw new DefinitionError(`${where}: a schema needs at least one column`);
  const seen = new Set<string>();
  for (const c of columns) {
    if (c.name === "" || c.name.includes("\0")) throw new DefinitionError(`${where}: bad column name ${JSON.stringify(c.name)}`);
    if (seen.has(c.name)) throw new DefinitionError(`${where}: column ${c.name} declared twice`);
    seen.add(c.name);
  }
  return columns;
}

/** Maps a DuckDB type name (as DESCRIBE prints it) to the closest declared type. */
export function columnTypeFromDuckDB(duckType: string): ColumnType {
  const t = duckType.toUpperCase();
  if (t === "BOOLEAN") return "boolean";
  if (t === "TINYINT" || t === "SMALLINT" || t === "INTEGER" || t === "UTINYINT" || t === "USMALLINT") return "integer";
  if (t === "BIGINT" || t === "UINTEGER" || t === "HUGEINT" || t === "UBIGINT") return "bigint";
  if (t === "DOUBLE" || t === "FLOAT" || t === "REAL") return "double";
  if (t === "DATE") return "date";
  if (t.startsWith("TIMESTAMP")) return "timestamp";
  const m = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(t);
  if (m) return `decimal(${Number(m[1])},${Number(m[2])})`;
  return "text";
}

/** Types for rows given as JavaScript objects, from the first non-null value of each field. */
export function inferSchemaFromRows(rows: readonly Record<string, unknown>[], where: string): Column[] {
  const names: string[] = [];
  for (const row of rows) for (const k of Object.keys(row)) if (!names.includes(k)) names.push(k);
  if (names.length === 0) throw new DefinitionError(`${where}: no rows and no declared columns, so the table's schema is unknown`);
  return names.map((name) => {
    const sample = rows.map((r) => r[name]).find((v) => v !== null && v !== undefined);
    let type: ColumnType = "text";
    if (typeof sample === "boolean") type = "boolean";
    else if (typeof sample === "bigint") type = "bigint";
    else if (typeof sample === "number") type = rows.every((r) => r[name] == null || Number.isInteger(r[name])) ? "bigint" : "double";
    return { name, type };
  });
}

/** The type of a constant column (`constants` of a source): as declared, else from its value; a YYYY-MM-DD string is a date. */
export function constantType(value: SqlValue, declared?: ColumnType): ColumnType {
  if (declared) return declared;
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "bigint") return "bigint";
  if (typeof value === "number") return Number.isInteger(value) ? "bigint" : "double";
  if (typeof value === "string" && /^\d{4}-\d{2}-\d{2}$/.test(value)) return "date";
  return "text";
}
