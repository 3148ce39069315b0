import { defineConfig } from "vitest/config";

const shared = { testTimeout: 60_000, hookTimeout: 60_000, pool: "forks" as const };

// The engine and HTTP API tests run twice: on SQLite, and on PostgreSQL when a test server is
// there (always under CI, where .ci/run starts one). Both adapters must behave the same.
const onPostgres = process.env.IDEM_TEST_PG_URL
  ? [{ test: { ...shared, name: "engine-on-postgres", include: ["test/engine/**/*.test.ts", "test/http/**/*.test.ts"], env: { IDEM_TEST_ENGINE_STORE: "postgres" } } }]
  : [];

export default defineConfig({
  test: {
    reporters: ["default", "./test/support/plain-summary-reporter.ts"],
    projects: [{ test: { ...shared, name: "all", include: ["test/**/*.test.ts"] } }, ...onPostgres],
  },
});
