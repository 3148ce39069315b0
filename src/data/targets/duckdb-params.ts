import type { DuckDBType, DuckDBValue } from "@duckdb/node-api";
import type { BoundValue } from "../sql.ts";

export interface DuckDBBinding {
  values: DuckDBValue[];
  /** Types for the values DuckDB cannot infer (a list, empty or not); undefined elsewhere. */
  types: (DuckDBType | undefined)[] | undefined;
}

/**
 * Bound values as DuckDB takes them. A text array becomes a LIST(VARCHAR) value with its type
 * given, because DuckDB infers no type from a bare JS array ("Cannot create values of type
 * ANY"): so `read_parquet(${files})` binds a list of paths. The driver is imported only when a
 * statement binds a list, since importing idem/data must not load DuckDB.
 */
export async function duckdbBinding(params: readonly BoundValue[]): Promise<DuckDBBinding> {
  if (!params.some((p) => Array.isArray(p))) return { values: params as DuckDBValue[], types: undefined };
  const { listValue, LIST, VARCHAR } = await import("@duckdb/node-api");
  const types: (DuckDBType | undefined)[] = [];
  const values = params.map((p, i) => {
    if (!Array.isArray(p)) return p as DuckDBValue;
    types[i] = LIST(VARCHAR);
    return listValue(p as readonly (string | null)[]);
  });
  types.length = values.length;
  return { values, types };
}
