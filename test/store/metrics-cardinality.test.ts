import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineEvents } from "../../src/engine/events/engine-events.ts";
import { prometheusMetrics } from "../../src/engine/metrics/prometheus.ts";
import { storeFacts, UNRESOLVED_STATES } from "../../src/engine/metrics/store-facts.ts";
import { INCIDENT_KINDS } from "../../src/core/model/incidents.ts";
import type { Store } from "../../src/store/port.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { historySql, NOW, PIPELINES, pipelines } from "../support/metrics-history.ts";
import { dropSchema, freshSchema, openPgStore, queryPg, testPostgresUrl } from "../process/postgres-support.ts";

/**
 * The number of series a scrape shows is bounded by the project, not by history: 100 pipelines
 * with 10,000 finished runs (50,000 task instances) give exactly as many store series as the
 * formula in docs/observability.md says, the same as with no history at all.
 */
/** Per pipeline: 2 live run states, 4 recent run states, 2 backfill states, 6 backfill progress states; per promise: lag, unpublished, 4 statuses. */
const STORE_SERIES = PIPELINES * (2 + 4 + 2 + 6) + PIPELINES * (1 + 1 + 4) + INCIDENT_KINDS.length * UNRESOLVED_STATES.length + /* (none)'s queue and age */ 2 + /* store up, read time */ 2;

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
