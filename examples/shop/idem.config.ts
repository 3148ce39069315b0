import { defineConfig } from "idem";

export default defineConfig({
  stateDir: ".idem",
  pipelines: "pipelines",
  // `idem history orders_daily` reads the write history from here
  warehouse: "duckdb:.idem/warehouse.duckdb",
  // DuckDB lets one process write a file at a time: one slot serializes every task that uses it
  pools: { warehouse: 1 },
});
