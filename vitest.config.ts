import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Pipeline files loaded inside a test import "idem": the source, the same modules as the test's.
const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const alias = [
  { find: /^idem$/, replacement: source("./src/index.ts") },
  { find: /^idem\/data$/, replacement: source("./src/data/index.ts") },
  { find: /^idem\/testing$/, replacement: source("./src/testing.ts") },
];

const shared = { testTimeout: 60_000, hookTimeout: 60_000, pool: "forks" as const };

// The engine and HTTP API tests run twice: on SQLite, and on PostgreSQL when a test server is
// there (always under CI, where .ci/run starts one). Both adapters must behave the same.
const onPostgres = process.env.IDEM_TEST_PG_URL
  ? [{ resolve: { alias }, test: { ...shared, name: "engine-on-postgres", include: ["test/engine/**/*.test.ts", "test/http/**/*.test.ts"], env: { IDEM_TEST_ENGINE_STORE: "postgres" } } }]
  : [];

export default defineConfig({
  test: {
    reporters: ["default", "./test/support/plain-summary-reporter.ts"],
    projects: [{ resolve: { alias }, test: { ...shared, name: "all", include: ["test/**/*.test.ts"] } }, ...onPostgres],
  },
});
