import { queryFileSide } from "./source-queries.ts";
import { fileSelect } from "./duckdb-read.ts";
import { columnTypeFromDuckDB, inferSchemaFromRows, normalizeSchema, type Column } from "./schema.ts";
import { describeSource, isFileSource, type Source } from "./source.ts";
import { sql, type SqlValue } from "./sql.ts";
import type { Target } from "./target.ts";

/** The columns a source provides, with their types; used to create a table on its first load. */
export async function sourceColumns(target: Target, source: Source): Promise<Column[]> {
  let columns: Column[];
  if (isFileSource(source)) {
    if (source.columns) {
      // Declared columns are what the file is read as; no need to ask DuckDB to sniff it.
      const declared = normalizeSchema(source.columns, describeSource(source)).filter((c) => !(c.name in (source.constants ?? {})));
      return [...declared, ...Object.entries(source.constants ?? {}).map(([name, value]) => ({ name, type: constantTypeFor(source, name, value) }))];
    }
    const described = await queryFileSide(target, sql`DESCRIBE ${fileSelect(source)}`);
    return described.map((r) => ({ name: String(r.column_name), type: columnTypeFromDuckDB(String(r.column_type)) }));
  }
  if ("rows" in source) {
    columns = source.columns ? normalizeSchema(source.columns, describeSource(source)) : inferSchemaFromRows(source.rows, describeSource(source));
  } else {
    columns = await (source.from ?? target).describeQuery(source.sql);
  }
  const names = new Set(columns.map((c) => c.name));
  for (const [name, value] of Object.entries(source.constants ?? {})) {
    if (!names.has(name)) columns.push({ name, type: constantType(value) });
  }
  return columns;
}

function constantTypeFor(source: Source, name: string, value: SqlValue): Column["type"] {
  const declared = "columns" in source && source.columns ? normalizeSchema(source.columns, describeSource(source)).find((c) => c.name === name) : undefined;
  return declared?.type ?? constantType(value);
}

function constantType(value: SqlValue): Column["type"] {
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "bigint") return "bigint";
  if (typeof value === "number") return Number.isInteger(value) ? "bigint" : "double";
  if (typeof value === "string" && /^\d{4}-\d{2}-\d{2}$/.test(value)) return "date";
  return "text";
}
