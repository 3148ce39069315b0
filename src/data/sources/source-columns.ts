import { queryFileSide } from "./source-queries.ts";
import { fileSelect } from "./duckdb-read.ts";
import { columnTypeFromDuckDB, constantType, inferSchemaFromRows, normalizeSchema, type Column } from "../schema.ts";
import { describeSource, type SourceSpec } from "./source.ts";
import { sql } from "../sql.ts";
import type { Target } from "../target.ts";

/** The columns a source provides, with their types; used to create a table on its first load. */
export async function sourceColumns(target: Target, source: SourceSpec): Promise<Column[]> {
  const constants = Object.entries(source.constants);
  let columns: Column[];
  switch (source.kind) {
    case "csv":
    case "json":
    case "parquet": {
      if (source.columns) {
        // Declared columns are what the file is read as; no need to ask DuckDB to sniff it.
        const declared = normalizeSchema(source.columns, describeSource(source));
        const of = (name: string) => declared.find((c) => c.name === name)?.type;
        return [...declared.filter((c) => !(c.name in source.constants)), ...constants.map(([name, value]) => ({ name, type: constantType(value, of(name)) }))];
      }
      const described = await queryFileSide(target, sql`DESCRIBE ${fileSelect(source)}`);
      return described.map((r) => ({ name: String(r.column_name), type: columnTypeFromDuckDB(String(r.column_type)) }));
    }
    case "rows":
      columns = source.columns ? normalizeSchema(source.columns, describeSource(source)) : inferSchemaFromRows(source.rows, describeSource(source));
      break;
    case "query":
      columns = await (source.from ?? target).describeQuery(source.sql);
      break;
  }
  const names = new Set(columns.map((c) => c.name));
  for (const [name, value] of constants) {
    if (!names.has(name)) columns.push({ name, type: constantType(value) });
  }
  return columns;
}
