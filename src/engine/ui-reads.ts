import type { AuditEntry, BackfillItem, DatasetEvent, Leadership, PipelineState, WorkerRecord } from "../store/port.ts";
import type { Engine } from "./engine.ts";

/** Reads the web UI needs beyond what the CLI asks of the engine. */
export async function pipelineStateOf(engine: Engine, pipelineId: string): Promise<PipelineState> {
  engine.pipeline(pipelineId);
  return engine.store.pipelineState(pipelineId, engine.clock.now());
}

/** A backfill's plan, date by date, with whether each one has started. */
export async function backfillItemsOf(engine: Engine, backfillId: string): Promise<BackfillItem[]> {
  await engine.backfillStatus(backfillId);
  return engine.store.backfillItems(backfillId);
}

export async function workersOf(engine: Engine): Promise<WorkerRecord[]> {
  return engine.store.listWorkers();
}

export async function leadershipOf(engine: Engine, role = "scheduler"): Promise<Leadership | null> {
  return engine.store.getLead(role);
}

export async function datasetEventsOf(engine: Engine, query: { dataset?: string; limit?: number }): Promise<DatasetEvent[]> {
  return engine.store.listDatasetEvents(query);
}

/** TEMPORARY until the store filters (i10's auditPage): filters the newest entries here. */
export async function auditPageOf(
  engine: Engine,
  query: { actor?: string; action?: string; pipelineId?: string; fromAt?: number; toAt?: number; limit: number; cursor?: string },
): Promise<{ items: AuditEntry[]; nextCursor: string | null }> {
  const before = query.cursor ? Number(query.cursor) : Infinity;
  const all = await engine.audit({ pipelineId: query.pipelineId, limit: 10_000 });
  const items = all.filter((e) =>
    e.id < before && (!query.actor || e.actor === query.actor) && (!query.action || e.action === query.action) &&
    (query.fromAt === undefined || e.at >= query.fromAt) && (query.toAt === undefined || e.at < query.toAt));
  const page = items.slice(0, query.limit);
  return { items: page, nextCursor: items.length > query.limit ? String(page.at(-1)!.id) : null };
}
