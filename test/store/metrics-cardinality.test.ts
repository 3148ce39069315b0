import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import type { Pipeline } from "../../src/core/pipeline/types.ts";
import { daily } from "../../src/core/time/index.ts";
import { EngineEvents } from "../../src/engine/events/engine-events.ts";
import { prometheusMetrics } from "../../src/engine/metrics/prometheus.ts";
import { storeFacts, UNRESOLVED_STATES } from "../../src/engine/metrics/store-facts.ts";
import { INCIDENT_KINDS } from "../../src/core/model/incidents.ts";
import type { Store } from "../../src/store/port.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { dropSchema, freshSchema, openPgStore, queryPg, testPostgresUrl } from "../process/postgres-support.ts";

/**
 * The number of series a scrape shows is bounded by the project, not by history: 100 pipelines
 * with 10,000 finished runs (50,000 task instances) give exactly as many store series as the
 * formula in docs/observability.md says, the same as with no history at all.
 */
const PIPELINES = 100;
const RUNS = 10_000;
const DAY_MS = 86_400_000;
const FIRST_DAY = Date.parse("2026-06-01T00:00:00Z");
const NOW = FIRST_DAY + (RUNS / PIPELINES + 2) * DAY_MS;

const pipelines: Pipeline[] = Array.from({ length: PIPELINES }, (_, i) =>
  pipeline(`hist${i}`, {
    schedule: daily({ at: "02:00", timezone: "UTC" }),
    start: "2026-06-01",
    promises: [{ dataset: `d${i}`, deadline: "D+1 06:00" }],
  }, Object.fromEntries(Array.from({ length: 5 }, (_, j) => [`t${j}`, j === 4 ? { publishes: `d${i}`, run: () => undefined } : { run: () => undefined }]))),
);

/** Per pipeline: 2 live run states, 4 recent run states, 2 backfill states, 6 backfill progress states; per promise: lag, unpublished, 4 statuses. */
const STORE_SERIES = PIPELINES * (2 + 4 + 2 + 6) + PIPELINES * (1 + 1 + 4) + INCIDENT_KINDS.length * UNRESOLVED_STATES.length + /* (none)'s queue and age */ 2 + /* store up, read time */ 2;

function historySql(dialect: "sqlite" | "postgres"): string[] {
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

async function seriesOf(store: Store): Promise<string[]> {
  const metrics = prometheusMetrics({ events: new EngineEvents(), storeFacts: () => storeFacts(store, pipelines, NOW), taskHostsAlive: () => 0 });
  try {
    const { text } = await metrics.scrape();
    const storeNames = /^idem_(store_|runs|task_instances|queued_|pool_|promise_|incidents_|backfill|lease_)/;
    return text.split("\n").filter((line) => storeNames.test(line));
  } finally {
    metrics.close();
  }
}

describe("the series a scrape shows, with 100 pipelines", () => {
  describe("SQLite", () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), "idem-metrics-cardinality-"));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it("are as many with 10,000 finished runs as with none", async () => {
      const store = new SqliteStore(join(dir, "state.db"));
      await store.migrate();
      const empty = await seriesOf(store);
      await store.close();
      const db = new Database(join(dir, "state.db"));
      db.transaction(() => {
        for (const statement of historySql("sqlite")) db.exec(statement);
      })();
      db.close();
      const full = new SqliteStore(join(dir, "state.db"));
      await full.migrate();
      try {
        const series = await seriesOf(full);
        expect(empty).toHaveLength(STORE_SERIES);
        expect(series).toHaveLength(STORE_SERIES);
        expect(series).toContain('idem_runs_recent{pipeline="hist7",state="failed"} 1');
      } finally {
        await full.close();
      }
    });
  });

  const url = testPostgresUrl();
  describe.skipIf(!url)("PostgreSQL", () => {
    const schema = freshSchema();
    afterAll(() => dropSchema(url!, schema));

    it("are as many with 10,000 finished runs as with none", async () => {
      const store = await openPgStore(url!, schema);
      try {
        const empty = await seriesOf(store);
        for (const statement of historySql("postgres")) await queryPg(url!, schema, statement);
        const series = await seriesOf(store);
        expect(empty).toHaveLength(STORE_SERIES);
        expect(series).toHaveLength(STORE_SERIES);
        expect(series).toContain('idem_runs_recent{pipeline="hist7",state="failed"} 1');
      } finally {
        await store.close();
      }
    }, 120_000);
  });
});
