import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { NewIncident, Store } from "../../src/store/port.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { dropSchema, freshSchema, testPostgresUrl } from "../process/postgres-support.ts";

const url = testPostgresUrl();
const T0 = Date.parse("2026-09-02T07:00:00Z");
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0)) await step();
});

const incident = (key: string, kind: NewIncident["kind"]): NewIncident => ({
  key, kind, dataset: "orders_daily", pipelineId: "shop", businessDate: "2026-09-01", runId: null, message: key, notify: [], at: T0,
});

/** What versions before 23 left: late publications open for good, a resolved incident with no resolver. */
async function oldIncidents(store: Store): Promise<void> {
  await store.openIncident(incident("late_publication:orders_daily:2026-09-01", "late_publication"));
  await store.openIncident(incident("sla_missed:orders_daily:2026-09-01", "sla_missed"));
  await store.resolveIncident("sla_missed:orders_daily:2026-09-01", T0 + 5, "published at 08:00");
  await store.openIncident(incident("did_not_run:shop:2026-09-02", "did_not_run"));
}

const COLUMNS = ["acknowledged_at", "acknowledged_by", "ack_reason", "ack_until", "resolved_by"];

async function expectMigrated(store: Store): Promise<void> {
  expect(await store.getIncident("late_publication:orders_daily:2026-09-01")).toMatchObject({
    resolvedAt: T0, resolvedBy: "watchdog", resolution: "closed by its publication: a late publication is a fact, not a condition",
  });
  expect(await store.getIncident("sla_missed:orders_daily:2026-09-01")).toMatchObject({ resolvedAt: T0 + 5, resolvedBy: "watchdog", resolution: "published at 08:00" });
  expect(await store.getIncident("did_not_run:shop:2026-09-02")).toMatchObject({ resolvedAt: null, resolvedBy: null, acknowledgement: null });
  expect((await store.listIncidents({ open: true })).map((i) => i.kind)).toEqual(["did_not_run"]);
}

describe("migration 23: an incident's lifecycle", () => {
  it("on SQLite, closes the late publications left open and names idem as the resolver of what was resolved", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-incidents-"));
    const store = new SqliteStore(join(dir, "state.db"));
    cleanup.push(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await store.migrate();
    await oldIncidents(store);
    // Back to version 22: the columns and the trigger as they were not.
    store.db.exec(`UPDATE incidents SET resolved_by = NULL; UPDATE incidents SET resolved_at = NULL, resolution = NULL WHERE kind = 'late_publication';
      DROP TRIGGER change_feed_incident_acknowledged; ${COLUMNS.map((c) => `ALTER TABLE incidents DROP COLUMN ${c};`).join(" ")}
      DELETE FROM schema_migrations WHERE version = 23;`);
    await store.migrate();
    await expectMigrated(store);
  });

  it.skipIf(!url)("on PostgreSQL, the same", async () => {
    const store = new PostgresStore({ connectionString: url!, schema: freshSchema() });
    cleanup.push(async () => {
      await store.close();
      await dropSchema(url!, store.schema);
    });
    await store.migrate();
    await oldIncidents(store);
    await store.pool.query(`UPDATE incidents SET resolved_by = NULL; UPDATE incidents SET resolved_at = NULL, resolution = NULL WHERE kind = 'late_publication';
      DROP TRIGGER change_feed_incidents ON incidents;
      ALTER TABLE incidents ${COLUMNS.map((c) => `DROP COLUMN ${c}`).join(", ")};
      CREATE TRIGGER change_feed_incidents AFTER INSERT OR UPDATE OF resolved_at ON incidents FOR EACH ROW EXECUTE FUNCTION change_feed_record();
      DELETE FROM schema_migrations WHERE version = 23;`);
    await store.migrate();
    await expectMigrated(store);
  });
});
