import type { ColumnType, CsvSource } from "idem/data";

/** orders_daily: one row per order, owned by its business date. */
export const ORDERS_TABLE: Record<string, ColumnType> = {
  order_id: "bigint",
  customer_id: "text",
  amount: "decimal(12,2)",
  ordered_at: "timestamp",
  order_date: "date",
};

/** The till's file for one day, read with declared types so a header-only file is an empty day. */
export function ordersFile(file: string, businessDate: string): CsvSource {
  return {
    csv: file,
    columns: { order_id: "bigint", customer_id: "text", amount: "decimal(12,2)", ordered_at: "timestamp" },
    constants: { order_date: businessDate },
  };
}
