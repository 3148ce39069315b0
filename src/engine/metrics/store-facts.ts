import type { DayStatus } from "../freshness/report.ts";
import { promiseDays } from "../freshness/report.ts";
import { CHECKER_ROLE } from "../freshness/watchdog.ts";
import { SCHEDULER_ROLE } from "../scheduler/presence.ts";
import { RUN_STATES, type RunState, type TaskState } from "../../core/model/states.ts";
import { INCIDENT_KINDS } from "../../core/model/incidents.ts";
import { incidentState } from "../../core/policy/incident-lifecycle.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import type { BackfillStore, FreshnessStore, IncidentKind, MetricReads, PoolStore, WorkerStore } from "../../store/port.ts";

/** What a scrape reads: the counting reads, pools, backfills, freshness and leases. */
export type FactStore = MetricReads & PoolStore & BackfillStore & FreshnessStore & WorkerStore;

/** How far back the windowed facts look: recent runs by interval, and each promise's business dates. */
export const RECENT_DAYS = 7;
const DAY_MS = 86_400_000;

export const LIVE_RUN_STATES = ["queued", "running"] as const satisfies readonly RunState[];
export const DAY_STATUSES = ["on_time", "late", "missed", "not_yet_due"] as const satisfies readonly DayStatus[];
/** The states an unresolved incident is counted in: open pages, acknowledged (or snoozed) does not. */
export const UNRESOLVED_STATES = ["open", "acknowledged"] as const;
type UnresolvedState = (typeof UNRESOLVED_STATES)[number];
/** The label of queued task instances that take no pool. */
export const NO_POOL = "(none)";

/**
 * The durable facts of an installation, read from the state store at the moment they are asked
 * for: a run that crashed or never started is in the store whatever became of the process that
 * ran it, so it counts. Every read is over live rows or a bounded window (never history), and
 * every label is bounded by the project (pipelines, tasks, pools, datasets, states, kinds).
 * Series that alerts compare are filled with zeros for each pipeline, pool and kind, so an
 * alert's expression has data before anything goes wrong.
 */
export interface StoreFacts {
  /** Runs queued or running, by pipeline and state. */
  liveRuns: Count<{ pipeline: string; state: RunState }>[];
  /** Runs whose interval started in the last RECENT_DAYS days, by pipeline and state. */
  recentRuns: Count<{ pipeline: string; state: RunState }>[];
  /** Task instances of the runs queued or running, by pipeline, task and state. */
  taskInstances: Count<{ pipeline: string; task: string; state: TaskState }>[];
  /** Per pool (and NO_POOL): task instances queued, and how long the longest-waiting one has waited. */
  queues: { pool: string; queued: number; oldestAgeSeconds: number }[];
  pools: { pool: string; slots: number; used: number }[];
  /** Per promise: seconds past the deadline of its oldest due business date not published (0: none), and its business dates by status. */
  promises: { pipeline: string; dataset: string; lagSeconds: number; unpublished: number; days: Record<DayStatus, number> }[];
  /** Unresolved incidents by kind, pipeline and state (open, or acknowledged and not yet due again). */
  openIncidents: Count<{ kind: IncidentKind; pipeline: string; state: UnresolvedState }>[];
  /** Live backfills (running or paused) and their runs, by pipeline. */
  backfills: Count<{ pipeline: string; state: "running" | "paused" }>[];
  backfillRuns: Count<{ pipeline: string; state: BackfillRunState }>[];
  /** Seconds since the scheduler's and the checker's lease holder last renewed, and since any worker's last heartbeat; absent: never held. */
  leases: { role: "scheduler" | "checker" | "worker"; ageSeconds: number; current: boolean }[];
}

export type BackfillRunState = "planned" | "not_started" | "queued" | "running" | "succeeded" | "failed";
export type Count<L> = { labels: L; count: number };

/** A worker not seen for this long is taken for dead (by `idem why`, `Engine.workers` and the metrics). */
export const WORKER_ALIVE_MS = 60_000;

export async function storeFacts(store: FactStore, pipelines: readonly Pipeline[], now: number): Promise<StoreFacts> {
  const ids = pipelines.map((p) => p.id);
  const [liveRuns, recentRuns, tasks, queued, pools, incidents, backfills, scheduler, checker, workers] = await Promise.all([
    store.liveRunCounts(),
    store.recentRunCounts({ pipelineIds: ids, fromStart: now - RECENT_DAYS * DAY_MS }),
    store.liveRunTaskCounts(),
    store.queuedByPool(),
    store.listPools(),
    store.openIncidentCounts(),
    store.listBackfills({ live: true }),
    store.getLead(SCHEDULER_ROLE),
    store.getLead(CHECKER_ROLE),
    store.listWorkers(),
  ]);

  const runCounts = (rows: typeof liveRuns, states: readonly RunState[]) => {
    const counts = new Map<string, Count<{ pipeline: string; state: RunState }>>();
    for (const pipeline of ids) for (const state of states) counts.set(`${pipeline}\0${state}`, { labels: { pipeline, state }, count: 0 });
    for (const r of rows) {
      const key = `${r.pipelineId}\0${r.state}`;
      const entry = counts.get(key) ?? { labels: { pipeline: r.pipelineId, state: r.state }, count: 0 };
      entry.count += r.count;
      counts.set(key, entry);
    }
    return [...counts.values()];
  };

  const queues = new Map<string, { pool: string; queued: number; oldestAgeSeconds: number }>();
  for (const pool of [NO_POOL, ...pools.map((p) => p.name)]) queues.set(pool, { pool, queued: 0, oldestAgeSeconds: 0 });
  for (const q of queued) {
    const pool = q.pool ?? NO_POOL;
    queues.set(pool, { pool, queued: q.queued, oldestAgeSeconds: Math.max(0, now - q.oldestQueuedAt) / 1000 });
  }

  const openIncidents = new Map<string, Count<{ kind: IncidentKind; pipeline: string; state: UnresolvedState }>>();
  const incidentKey = (kind: string, pipeline: string, state: string) => `${kind}\0${pipeline}\0${state}`;
  for (const kind of INCIDENT_KINDS) {
    for (const state of UNRESOLVED_STATES) openIncidents.set(incidentKey(kind, "", state), { labels: { kind, pipeline: "", state }, count: 0 });
  }
  for (const i of incidents) {
    const acknowledgement = i.acknowledged ? { until: i.ackUntil } : null;
    const state = incidentState({ acknowledgement, resolvedAt: null }, now) === "acknowledged" ? "acknowledged" : "open";
    const pipeline = i.pipelineId ?? "";
    const key = incidentKey(i.kind, pipeline, state);
    const counted = openIncidents.get(key)?.count ?? 0;
    openIncidents.set(key, { labels: { kind: i.kind, pipeline, state }, count: counted + i.count });
  }

  return {
    liveRuns: runCounts(liveRuns, LIVE_RUN_STATES),
    recentRuns: runCounts(recentRuns, RUN_STATES),
    taskInstances: tasks.map((t) => ({ labels: { pipeline: t.pipelineId, task: t.taskId, state: t.state }, count: t.count })),
    queues: [...queues.values()],
    pools: pools.map((p) => ({ pool: p.name, slots: p.slots, used: p.used })),
    promises: await promiseFacts(store, pipelines, now),
    openIncidents: [...openIncidents.values()],
    ...(await backfillFacts(store, ids, backfills)),
    leases: [
      ...(scheduler ? [{ role: "scheduler" as const, ageSeconds: (now - scheduler.renewedAt) / 1000, current: scheduler.expiresAt > now }] : []),
      ...(checker ? [{ role: "checker" as const, ageSeconds: (now - checker.renewedAt) / 1000, current: checker.expiresAt > now }] : []),
      ...workerLease(workers.map((w) => w.lastSeen), now),
    ],
  };
}

function workerLease(lastSeen: number[], now: number): StoreFacts["leases"] {
  if (lastSeen.length === 0) return [];
  const newest = Math.max(...lastSeen);
  return [{ role: "worker", ageSeconds: (now - newest) / 1000, current: now - newest < WORKER_ALIVE_MS }];
}

async function promiseFacts(store: FactStore, pipelines: readonly Pipeline[], now: number): Promise<StoreFacts["promises"]> {
  // One read per promise, all at once: on PostgreSQL their round trips overlap.
  const promises = pipelines.flatMap((pipeline) => pipeline.promises.map((promise) => ({ pipeline, promise })));
  return Promise.all(promises.map(async ({ pipeline, promise }) => {
    const { all } = await promiseDays(store, pipeline, promise, now, RECENT_DAYS);
    const recent = all.slice(-RECENT_DAYS);
    const days = Object.fromEntries(DAY_STATUSES.map((s) => [s, 0])) as Record<DayStatus, number>;
    for (const day of recent) days[day.status]++;
    // Late (past the SLO) or missed (past the deadline), and still not published.
    const unpublished = recent.filter((d) => d.publishedAt === null && d.status !== "not_yet_due" && d.status !== "on_time");
    const overdue = unpublished.filter((d) => d.deadlineAt <= now);
    const lagSeconds = overdue.length ? (now - overdue[0]!.deadlineAt) / 1000 : 0;
    return { pipeline: pipeline.id, dataset: promise.dataset, lagSeconds, unpublished: unpublished.length, days };
  }));
}

async function backfillFacts(
  store: FactStore,
  ids: readonly string[],
  live: Awaited<ReturnType<FactStore["listBackfills"]>>,
): Promise<Pick<StoreFacts, "backfills" | "backfillRuns">> {
  const backfills = new Map<string, Count<{ pipeline: string; state: "running" | "paused" }>>();
  const runs = new Map<string, Count<{ pipeline: string; state: BackfillRunState }>>();
  const STATES: BackfillRunState[] = ["planned", "not_started", "queued", "running", "succeeded", "failed"];
  for (const pipeline of ids) {
    for (const state of ["running", "paused"] as const) backfills.set(`${pipeline}\0${state}`, { labels: { pipeline, state }, count: 0 });
    for (const state of STATES) runs.set(`${pipeline}\0${state}`, { labels: { pipeline, state }, count: 0 });
  }
  const add = <L extends { pipeline: string; state: string }>(map: Map<string, Count<L>>, labels: L, n: number) => {
    const key = `${labels.pipeline}\0${labels.state}`;
    const entry = map.get(key) ?? { labels, count: 0 };
    entry.count += n;
    map.set(key, entry);
  };
  for (const backfill of live) {
    if (backfill.state !== "running" && backfill.state !== "paused") continue;
    add(backfills, { pipeline: backfill.pipelineId, state: backfill.state }, 1);
    const p = await store.backfillProgress(backfill.backfillId);
    const counts: Record<BackfillRunState, number> = { planned: p.planned, not_started: p.notStarted, queued: p.queued, running: p.running, succeeded: p.succeeded, failed: p.failed };
    for (const state of STATES) add(runs, { pipeline: backfill.pipelineId, state }, counts[state]);
  }
  return { backfills: [...backfills.values()], backfillRuns: [...runs.values()] };
}
