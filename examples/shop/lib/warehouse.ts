import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";

/** Opens the shop's DuckDB warehouse for the length of one task; DuckDB allows one writer process. */
export async function withWarehouse<T>(path: string, fn: (db: DuckDBConnection) => Promise<T>): Promise<T> {
  mkdirSync(dirname(path), { recursive: true });
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  try {
    return await fn(connection);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

export const ORDER_COLUMNS = "{'order_id': 'BIGINT', 'customer_id': 'VARCHAR', 'amount': 'DECIMAL(12,2)', 'ordered_at': 'TIMESTAMP'}";

/** The till's file for one day, read with declared types so a header-only file is an empty day. */
export const READ_ORDERS = `read_csv($file, header = true, columns = ${ORDER_COLUMNS})`;
