import { randomBytes } from "node:crypto";

/**
 * The PostgreSQL server for these tests, from IDEM_TEST_PG_URL. Without it the PostgreSQL tests
 * are skipped with the reason printed, except under CI=true, where a missing server is a failure.
 */
export function postgresUrl(): { url: string | null; reason: string } {
  const url = process.env.IDEM_TEST_PG_URL?.trim() || null;
  if (url) return { url, reason: "" };
  const reason = "IDEM_TEST_PG_URL is not set (start one with: eval \"$(bash .ci/postgres.sh start)\")";
  if (process.env.CI === "true") throw new Error(`PostgreSQL tests cannot run under CI=true: ${reason}`);
  console.warn(`skipping PostgreSQL tests: ${reason}`);
  return { url: null, reason };
}

/** A schema of its own for one test file, so files can run in parallel. */
export function freshSchema(prefix = "t"): string {
  return `${prefix}_${randomBytes(5).toString("hex")}`;
}
