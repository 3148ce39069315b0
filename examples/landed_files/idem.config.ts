import { defineConfig } from "idem";

export default defineConfig({
  stateDir: ".idem",
  pipelines: "pipelines",
  // `idem history landed_orders` reads the write history from here
  warehouse: "duckdb:.idem/warehouse.duckdb",
  // DuckDB lets one process write a file at a time: one slot serializes the per-file loads
  pools: { warehouse: 1 },
});
