import { duckdbType } from "../targets/duckdb.ts";
import { duckdbBinding } from "../targets/duckdb-params.ts";
import { constantType, normalizeSchema, type Column } from "../schema.ts";
import type { FileSpec } from "./source.ts";
import { ident, joinSql, render, sql, trusted, doubleQuote, type Sql, type SqlValue } from "../sql.ts";

/**
 * A SELECT over a CSV, JSON or Parquet file in DuckDB's SQL. With declared columns a CSV is read
 * as text and cast, so DuckDB's type detection cannot turn "007" into 7; a value that does not
 * cast is a parse error, not a silent NULL.
 */
export function fileSelect(source: FileSpec): Sql {
  const declared = source.columns ? normalizeSchema(source.columns, source.path) : null;
  let reader: Sql;
  switch (source.kind) {
    case "csv":
      // A quoted empty field is an empty string and an unquoted one is NULL, as in PostgreSQL's
      // CSV, so a file means the same whichever path loads it.
      reader = sql`read_csv(${source.path}, header = ${source.header}, delim = ${source.delimiter}, allow_quoted_nulls = false${trusted(declared ? ", all_varchar = true" : "")})`;
      break;
    case "json":
      reader = sql`read_json_auto(${source.path})`;
      break;
    case "parquet":
      reader = sql`read_parquet(${source.path})`;
      break;
  }
  const constants = source.constants;
  const exprs: Sql[] = declared
    ? declared.filter((c) => !(c.name in constants)).map((c) => sql`CAST(${ident(c.name)} AS ${trusted(duckdbType(c.type))}) AS ${ident(c.name)}`)
    : [trusted("*")];
  for (const [name, value] of Object.entries(constants)) {
    const type = constantType(value, declared?.find((c) => c.name === name)?.type);
    exprs.push(sql`CAST(${value} AS ${trusted(duckdbType(type))}) AS ${ident(name)}`);
  }
  return sql`SELECT ${joinSql(exprs)} FROM ${reader}`;
}

const duckDialect = { quoteIdent: doubleQuote, placeholder: (n: number) => `$${n}` };

/** An in-memory DuckDB for reading files on behalf of targets that cannot read them. */
export async function withMemoryDuckDB<T>(fn: (run: MemoryDuckDB) => Promise<T>): Promise<T> {
  const { DuckDBInstance } = await import("@duckdb/node-api"); // only when a file is read
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  const api: MemoryDuckDB = {
    async rows(statement) {
      const { text, params } = render(statement, duckDialect);
      const { values, types } = await duckdbBinding(params);
      return (await connection.runAndReadAll(text, values, types as never)).getRowObjectsJson() as Record<string, unknown>[];
    },
    async exec(statement) {
      const { text, params } = render(statement, duckDialect);
      const { values, types } = await duckdbBinding(params);
      return Number((await connection.run(text, values, types as never)).rowsChanged);
    },
    async *batches(statement, size) {
      const { text, params } = render(statement, duckDialect);
      const { values, types } = await duckdbBinding(params);
      const result = await connection.stream(text, values, types as never);
      let batch: SqlValue[][] = [];
      for (;;) {
        const chunk = await result.fetchChunk();
        if (!chunk || chunk.rowCount === 0) break;
        for (const row of chunk.getRows()) {
          batch.push(row as SqlValue[]);
          if (batch.length >= size) {
            yield batch;
            batch = [];
          }
        }
      }
      if (batch.length > 0) yield batch;
    },
  };
  try {
    return await fn(api);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

export interface MemoryDuckDB {
  rows(statement: Sql): Promise<Record<string, unknown>[]>;
  exec(statement: Sql): Promise<number>;
  /** Rows of a statement whose columns are all VARCHAR, in batches of `size`. */
  batches(statement: Sql, size: number): AsyncGenerator<SqlValue[][]>;
}

export type { Column };
