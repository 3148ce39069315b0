import type { CodeVersionRecord, CodeVersionUse } from "../port.ts";
import type { RunState } from "../../core/model/states.ts";
import { backfillProgress } from "../../core/policy/backfill-progress.ts";
import { countsByTask, durationsByTask, poolUsage, FAR } from "../decision-rows.ts";
import type {
  AttemptRecord, AuditEntry, AuditQuery, PipelineVersionRecord, RunQuery, RunRecord, TaskInstanceRecord, SkippedInterval, PoolUsage,
  WorkerRecord, ExpiredAttempt, Leadership, DatasetEvent, BackfillRecord, BackfillItem, BackfillProgress, FreshnessRecord,
  FreshnessPublication, Incident, OutboxAlert, ApiTokenRecord, ChangeEvent, RunPageQuery, AuditPageQuery, WatermarkRecord
} from "../port.ts";
import { mappedStateCounts, rowMappers, watermarkValue } from "../row-mappers.ts";
import type { Transactions } from "./transaction.ts";
import { toAlertRecord } from "../alert-rows.ts";
import type { AlertPageQuery, AlertRecord, MappedInstanceQuery, MappedInstanceRecord, TaskStateCell } from "../port.ts";
import type { IncidentCount, PoolQueue, RunStateCount, TaskStateCount } from "../port.ts";
import { toIncidentCount, toPoolQueue, toRunStateCount, toTaskStateCount } from "../metric-rows.ts";

/** PostgreSQL hands back booleans and jsonb columns already decoded. */
export const mappers = rowMappers({ bool: (v) => v === true, json: (v) => v });
const {
  toSkippedInterval, toWorker, toExpiredAttempt, toDatasetEvent, toFreshness, toFreshnessPublication, toOutboxAlert, toAuditEntry,
  toLeadership, toIncident, toBackfill, toBackfillItem, toRun, toTaskInstance, toAttempt, toApiToken, toChangeEvent, toWatermark, toCodeVersion, toCodeVersionUse
} = mappers;

/**
 * The PostgreSQL store's reads: views of runs, history and the other roles' records, each one
 * statement (or a few sent together) on the pool, retried while the server is briefly out of
 * reach. `PostgresStore` adds the writes.
 */
export class PostgresReads {
  protected db!: Transactions;

  async getPipelineVersion(pipelineId: string, version: string): Promise<PipelineVersionRecord | null> {
    const row = await this.db.first("selectPipelineVersion", [pipelineId, version]);
    return row ? { pipelineId: row.pipeline_id, version: row.version, definition: row.definition, createdAt: row.created_at } : null;
  }

  async getCodeVersion(pipelineId: string, codeVersion: string): Promise<CodeVersionRecord | null> {
    const row = await this.db.first("selectCodeVersion", [pipelineId, codeVersion]);
    return row ? toCodeVersion(row) : null;
  }

  async listCodeVersions(pipelineId: string): Promise<CodeVersionUse[]> {
    return (await this.db.rows("selectCodeVersionUses", [pipelineId])).map(toCodeVersionUse);
  }

  async countLiveRuns(pipelineId: string): Promise<number> {
    return (await this.db.first("countLiveRuns", [pipelineId]))!.n;
  }

  async ledger(pipelineId: string, from: number, to: number): Promise<{ runs: RunRecord[]; skipped: SkippedInterval[] }> {
    const [runs, skipped] = await Promise.all([
      this.db.rows("selectRunsInRange", [pipelineId, from, to]),
      this.db.rows("selectSkippedInRange", [pipelineId, from, to]),
    ]);
    return {
      runs: runs.map(toRun),
      skipped: skipped.map(toSkippedInterval),
    };
  }

  async listPools(): Promise<PoolUsage[]> {
    const [poolRows, holders, remote] = await Promise.all([this.db.rows("selectPools"), this.db.rows("selectPoolHolders"), this.db.rows("remotePoolHolders", [null])]);
    return poolUsage(poolRows, holders, remote);
  }

  async listWorkers(): Promise<WorkerRecord[]> {
    return (await this.db.rows("selectWorkers")).map(toWorker);
  }

  async listExpiredAttempts(now: number, limit: number): Promise<ExpiredAttempt[]> {
    return (await this.db.rows("selectExpiredAttempts", [now, limit])).map(toExpiredAttempt);
  }

  async getLead(role: string): Promise<Leadership | null> {
    const row = await this.db.first("selectLease", [role]);
    return row ? toLeadership(row, row.holder) : null;
  }

  async listDatasetEvents(query: { dataset?: string; limit?: number }): Promise<DatasetEvent[]> {
    const limit = query.limit ?? 100;
    const rows = query.dataset ? await this.db.rows("selectDatasetEventsOf", [query.dataset, limit]) : await this.db.rows("selectDatasetEvents", [limit]);
    return rows.map(toDatasetEvent);
  }

  async getBackfill(backfillId: string): Promise<BackfillRecord | null> {
    const row = await this.db.first("selectBackfill", [backfillId]);
    return row ? toBackfill(row) : null;
  }

  async listBackfills(query: { pipelineId?: string; live?: boolean; limit?: number }): Promise<BackfillRecord[]> {
    const rows = query.live
      ? await this.db.rows("selectLiveBackfills")
      : query.pipelineId
        ? await this.db.rows("selectBackfillsOf", [query.pipelineId, query.limit ?? 50])
        : await this.db.rows("selectBackfills", [query.limit ?? 50]);
    return rows.map(toBackfill).filter((b) => !query.pipelineId || b.pipelineId === query.pipelineId);
  }

  async backfillItems(backfillId: string): Promise<BackfillItem[]> {
    return (await this.db.rows("selectBackfillItems", [backfillId])).map(toBackfillItem);
  }

  async pendingBackfillItems(backfillId: string, limit: number): Promise<BackfillItem[]> {
    return (await this.db.rows("selectPendingBackfillItems", [backfillId, limit])).map(toBackfillItem);
  }

  async countLiveBackfillRuns(backfillId: string): Promise<number> {
    return (await this.db.first("countLiveBackfillRuns", [backfillId]))!.n;
  }

  async backfillProgress(backfillId: string): Promise<BackfillProgress> {
    const [[counts], states] = await Promise.all([
      this.db.rows("backfillItemCounts", [backfillId]),
      this.db.rows("backfillRunStates", [backfillId]),
    ]);
    const items = counts && { planned: counts.planned, notStarted: counts.not_started, untouched: counts.untouched };
    return backfillProgress(items, states as { state: RunState; n: number }[]);
  }

  async mappedItemCounts(pipelineId: string, taskIds: readonly string[], runs: number): Promise<Map<string, number[]>> {
    return countsByTask(await this.db.rows("mappedItemCounts", [pipelineId, runs, taskIds]));
  }

  async taskDurations(pipelineId: string, perTask: number): Promise<Map<string, number[]>> {
    return durationsByTask(await this.db.rows("taskDurations", [pipelineId, perTask]));
  }

  async listFreshness(dataset: string, fromDate: string, toDate: string): Promise<FreshnessRecord[]> {
    return (await this.db.rows("selectFreshnessRange", [dataset, fromDate, toDate])).map(toFreshness);
  }

  async freshnessHistory(dataset: string, businessDate: string): Promise<FreshnessPublication[]> {
    return (await this.db.rows("selectFreshnessHistory", [dataset, businessDate])).map(toFreshnessPublication);
  }

  async getIncident(key: string): Promise<Incident | null> {
    const [row] = await this.db.rows("selectIncident", [key]);
    return row ? toIncident(row) : null;
  }

  async promiseFirstSeen(pipelineId: string, dataset: string): Promise<number | null> {
    const [row] = await this.db.rows("selectPromiseFirstSeen", [pipelineId, dataset]);
    return row?.first_seen === null || row?.first_seen === undefined ? null : Number(row.first_seen);
  }

  async listIncidents(query: { open?: boolean; limit?: number }): Promise<Incident[]> {
    return (await this.db.rows(query.open ? "selectOpenIncidents" : "selectIncidents", [query.limit ?? 100])).map(toIncident);
  }

  async dueAlerts(now: number, limit: number): Promise<OutboxAlert[]> {
    return (await this.db.rows("selectDueAlerts", [now, limit])).map(toOutboxAlert);
  }

  async failedRunsSince(since: number): Promise<RunRecord[]> {
    return (await this.db.rows("selectFailedRunsSince", [since])).map(toRun);
  }

  async getWatermark(pipelineId: string, taskId: string): Promise<string | number | null> {
    const row = await this.db.first("selectWatermark", [pipelineId, taskId]);
    return row ? watermarkValue(row) : null;
  }

  async getRun(runId: string): Promise<RunRecord | null> {
    const row = await this.db.first("selectRun", [runId]);
    return row ? toRun(row) : null;
  }

  async listRuns(query: RunQuery): Promise<RunRecord[]> {
    const limit = query.limit ?? 100;
    const rows = query.pipelineId ? await this.db.rows("selectRunsOfPipeline", [query.pipelineId, limit]) : await this.db.rows("selectRuns", [limit]);
    const runs = rows.map(toRun);
    return query.states ? runs.filter((r) => query.states!.includes(r.state)) : runs;
  }

  async listTaskInstances(runId: string): Promise<TaskInstanceRecord[]> {
    return (await this.db.rows("selectTaskInstances", [runId])).map(toTaskInstance);
  }

  async getTaskInstance(runId: string, taskId: string): Promise<TaskInstanceRecord | null> {
    const row = await this.db.first("selectTaskInstance", [runId, taskId]);
    return row ? toTaskInstance(row) : null;
  }

  async listAttempts(runId: string, taskId?: string): Promise<AttemptRecord[]> {
    const rows = taskId ? await this.db.rows("selectAttemptsOfTask", [runId, taskId]) : await this.db.rows("selectAttempts", [runId]);
    return rows.map(toAttempt);
  }

  async nextRetryAt(runId: string): Promise<number | null> {
    return ((await this.db.first("nextRetryAt", [runId]))?.at as number | null) ?? null;
  }

  async listAudit(query: AuditQuery): Promise<AuditEntry[]> {
    const limit = query.limit ?? 100;
    const rows = query.pipelineId ? await this.db.rows("selectAuditOfPipeline", [query.pipelineId, limit]) : await this.db.rows("selectAudit", [limit]);
    return rows.map(toAuditEntry);
  }

  async findToken(tokenHash: string): Promise<ApiTokenRecord | null> {
    const row = await this.db.first("selectLiveToken", [tokenHash]);
    return row ? toApiToken(row) : null;
  }

  async listTokens(query: { includeRevoked?: boolean }): Promise<ApiTokenRecord[]> {
    return (await this.db.rows(query.includeRevoked ? "selectAllTokens" : "selectLiveTokens")).map(toApiToken);
  }

  async hasTokens(): Promise<boolean> {
    return (await this.db.first("anyLiveToken"))!.found === true;
  }

  async readChanges(afterId: number, limit: number): Promise<ChangeEvent[]> {
    return (await this.db.rows("selectChanges", [afterId, limit])).map(toChangeEvent);
  }

  async changeBounds(): Promise<{ newest: number; oldest: number | null }> {
    const row = (await this.db.first("changeBounds"))!;
    return { newest: row.newest, oldest: row.oldest };
  }

  async pageMappedInstances(query: MappedInstanceQuery): Promise<MappedInstanceRecord[]> {
    const rows = await this.db.rows("pageMappedInstances", [
      query.runId, query.taskId, query.afterKey ?? "", query.keyPrefix ?? null, query.states ? [...query.states] : null, query.limit,
    ]);
    return rows.map(mappers.toMappedInstance);
  }

  async pageRuns(query: RunPageQuery): Promise<RunRecord[]> {
    const params = [
      query.pipelineId, Math.min(query.beforeStart ?? FAR, query.toStart ?? FAR), query.fromStart ?? -FAR,
      query.states ? [...query.states] : null, query.triggers ? [...query.triggers] : null, query.limit,
    ];
    const rows = query.codeVersion === undefined ? await this.db.rows("pageRuns", params) : await this.db.rows("pageRunsOfCode", [...params, query.codeVersion]);
    return rows.map(toRun);
  }

  async taskInstancesOfRuns(runIds: readonly string[]): Promise<TaskInstanceRecord[]> {
    if (runIds.length === 0) return [];
    return (await this.db.rows("taskInstancesOfRuns", [[...runIds]])).map(toTaskInstance);
  }

  async pageAudit(query: AuditPageQuery): Promise<AuditEntry[]> {
    const rows = await this.db.rows("pageAudit", [
      query.beforeId ?? FAR, query.fromAt ?? -FAR, query.toAt ?? FAR, query.pipelineId ?? null, query.actor ?? null, query.action ?? null, query.limit,
    ]);
    return rows.map(toAuditEntry);
  }

  async pageDatasetEvents(query: { dataset?: string; beforeId?: number; limit: number }): Promise<DatasetEvent[]> {
    return (await this.db.rows("pageDatasetEvents", [query.beforeId ?? FAR, query.dataset ?? null, query.limit])).map(toDatasetEvent);
  }

  async pageIncidents(query: { open?: boolean; before?: { openedAt: number; key: string }; limit: number }): Promise<Incident[]> {
    const rows = await this.db.rows("pageIncidents", [query.before?.openedAt ?? FAR, query.before?.key ?? "", query.open ?? null, query.limit]);
    return rows.map(toIncident);
  }

  async listWatermarks(pipelineId?: string): Promise<WatermarkRecord[]> {
    return (await this.db.rows("selectWatermarks", [pipelineId ?? null])).map(toWatermark);
  }

  async pageAlerts(query: AlertPageQuery): Promise<AlertRecord[]> {
    const rows = await this.db.rows("pageAlerts", [query.beforeId ?? FAR, query.pipelineId ?? null, query.incidentKey ?? null, query.state ?? null, query.limit]);
    return rows.map(toAlertRecord);
  }

  async auditOfRun(query: { runId: string; actions?: readonly string[]; limit: number }): Promise<AuditEntry[]> {
    return (await this.db.rows("auditOfRun", [query.runId, query.actions ? [...query.actions] : null, query.limit])).map(toAuditEntry);
  }

  async taskStatesOfRuns(runIds: readonly string[]): Promise<TaskStateCell[]> {
    if (runIds.length === 0) return [];
    return (await this.db.rows("taskStatesOfRuns", [[...runIds]])).map((r) => ({ runId: r.run_id, taskId: r.task_id, state: r.state, tryNumber: Number(r.try_number), mapped: mappedStateCounts(r) }));
  }

  async taskRowsOfRun(runId: string): Promise<TaskInstanceRecord[]> {
    return (await this.db.rows("taskRowsOfRun", [runId])).map(toTaskInstance);
  }

  async attemptsOfTaskRows(runId: string): Promise<AttemptRecord[]> {
    return (await this.db.rows("attemptsOfTaskRows", [runId])).map(toAttempt);
  }

  async liveRunCounts(): Promise<RunStateCount[]> {
    return (await this.db.rows("metricLiveRuns")).map(toRunStateCount);
  }

  async recentRunCounts(query: { pipelineIds: readonly string[]; fromStart: number }): Promise<RunStateCount[]> {
    return (await this.db.rows("metricRecentRuns", [[...query.pipelineIds], query.fromStart])).map(toRunStateCount);
  }

  async liveRunTaskCounts(): Promise<TaskStateCount[]> {
    return (await this.db.rows("metricTaskInstancesOfLiveRuns")).map(toTaskStateCount);
  }

  async queuedByPool(): Promise<PoolQueue[]> {
    return (await this.db.rows("metricQueuedByPool")).map(toPoolQueue);
  }

  async openIncidentCounts(): Promise<IncidentCount[]> {
    return (await this.db.rows("metricOpenIncidents")).map(toIncidentCount);
  }
}
