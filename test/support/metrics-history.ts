/**
 * A project of 100 daily pipelines (five tasks, one promise each) and 10,000 finished runs (50,000
 * task instances), written by SQL in one statement per table: the history the metrics
 * cardinality test and the scrape benchmark read.
 */
import { pipeline } from "../../src/core/pipeline/define.ts";
import type { Pipeline } from "../../src/core/pipeline/types.ts";
import { daily } from "../../src/core/time/index.ts";

export const PIPELINES = 100;
export const RUNS = 10_000;
const DAY_MS = 86_400_000;
const FIRST_DAY = Date.parse("2026-06-01T00:00:00Z");
export const NOW = FIRST_DAY + (RUNS / PIPELINES + 2) * DAY_MS;

export const pipelines: Pipeline[] = Array.from({ length: PIPELINES }, (_, i) =>
  pipeline(`hist${i}`, {
    schedule: daily({ at: "02:00", timezone: "UTC" }),
    start: "2026-06-01",
    promises: [{ dataset: `d${i}`, deadline: "D+1 06:00" }],
  }, Object.fromEntries(Array.from({ length: 5 }, (_, j) => [`t${j}`, j === 4 ? { publishes: `d${i}`, run: () => undefined } : { run: () => undefined }]))),
);

export function historySql(dialect: "sqlite" | "postgres"): string[] {
  const day = dialect === "postgres" ? "to_char(to_timestamp(s / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')" : "date(s / 1000, 'unixepoch')";
  const numbers = dialect === "postgres"
    ? `(SELECT i, 'hist' || (i % ${PIPELINES}) AS pipeline_id, ${FIRST_DAY}::bigint + (i / ${PIPELINES})::bigint * ${DAY_MS} AS s FROM generate_series(0, ${RUNS - 1}) AS i) AS r`
    : `(WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${RUNS - 1})
        SELECT i, 'hist' || (i % ${PIPELINES}) AS pipeline_id, ${FIRST_DAY} + (i / ${PIPELINES}) * ${DAY_MS} AS s FROM n) AS r`;
  const tasks = dialect === "postgres" ? "generate_series(0, 4) AS j" : "(WITH RECURSIVE m(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM m WHERE j < 4) SELECT j FROM m) AS m";
  return [
    `INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at, started_at, ended_at)
     SELECT pipeline_id || '@' || ${day}, pipeline_id, s, s + ${DAY_MS}, ${day}, CASE WHEN i % 7 = 3 THEN 'failed' ELSE 'success' END, 'schedule', 'hist', '{}',
            s + ${DAY_MS}, s + ${DAY_MS}, s + ${DAY_MS + 60_000} FROM ${numbers}`,
    `INSERT INTO task_instances (run_id, task_id, state, try_number, max_tries, trigger_rule, queued_at, started_at, ended_at)
     SELECT r.run_id, 't' || j, CASE WHEN r.state = 'failed' AND j = 4 THEN 'failed' ELSE 'success' END, 1, 1, 'all_success',
            r.started_at, r.started_at, r.ended_at FROM runs r, ${tasks}`,
  ];
}
