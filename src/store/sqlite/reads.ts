import type { CodeVersionRecord, CodeVersionUse } from "../port.ts";
import type Database from "better-sqlite3";
import type { RunState } from "../../core/model/states.ts";
import { backfillProgress } from "../../core/policy/backfill-progress.ts";
import { countsByTask, durationsByTask, poolUsage, FAR } from "../decision-rows.ts";
import type {
  AttemptRecord, AuditEntry, AuditQuery, PipelineVersionRecord, RunQuery, RunRecord, TaskInstanceRecord, SkippedInterval, PoolUsage,
  WorkerRecord, ExpiredAttempt, Leadership, DatasetEvent, BackfillRecord, BackfillItem, BackfillProgress, FreshnessRecord,
  FreshnessPublication, Incident, OutboxAlert, ApiTokenRecord, ChangeEvent, RunPageQuery, AuditPageQuery, WatermarkRecord
} from "../port.ts";
import { mappedStateCounts, rowMappers, watermarkValue, type Row } from "../row-mappers.ts";
import type { SQL } from "./sql.ts";
import { toAlertRecord } from "../alert-rows.ts";
import type { AlertPageQuery, AlertRecord, TaskStateCell } from "../port.ts";
import type { IncidentCount, PoolQueue, RunStateCount, TaskStateCount } from "../port.ts";
import { toIncidentCount, toPoolQueue, toRunStateCount, toTaskStateCount } from "../metric-rows.ts";

export type Statements = { [K in keyof typeof SQL]: Database.Statement };

/** SQLite keeps booleans as 0/1 and JSON as text. */
export const mappers = rowMappers({ bool: (v) => v === 1, json: (v) => (v === null ? null : JSON.parse(v as string)) });
const {
  toSkippedInterval, toWorker, toExpiredAttempt, toDatasetEvent, toFreshness, toFreshnessPublication, toOutboxAlert, toAuditEntry,
  toLeadership, toIncident, toBackfill, toBackfillItem, toRun, toTaskInstance, toAttempt, toApiToken, toChangeEvent, toWatermark, toCodeVersion, toCodeVersionUse
} = mappers;

/**
 * The SQLite store's reads: views of runs, history and the other roles' records, one prepared
 * statement each (or two), no transaction needed. `SqliteStore` adds the writes.
 */
export class SqliteReads {
  protected statements: Statements | null = null;

  protected get q(): Statements {
    if (!this.statements) throw new Error("SqliteStore: call migrate() before use");
    return this.statements;
  }

  async getPipelineVersion(pipelineId: string, version: string): Promise<PipelineVersionRecord | null> {
    const row = this.q.selectPipelineVersion.get(pipelineId, version) as Row | undefined;
    return row
      ? { pipelineId: row.pipeline_id, version: row.version, definition: JSON.parse(row.definition), createdAt: row.created_at }
      : null;
  }

  async getCodeVersion(pipelineId: string, codeVersion: string): Promise<CodeVersionRecord | null> {
    const row = this.q.selectCodeVersion.get(pipelineId, codeVersion) as Row | undefined;
    return row ? toCodeVersion(row) : null;
  }

  async listCodeVersions(pipelineId: string): Promise<CodeVersionUse[]> {
    return (this.q.selectCodeVersionUses.all(pipelineId) as Row[]).map(toCodeVersionUse);
  }

  async countLiveRuns(pipelineId: string): Promise<number> {
    return (this.q.countLiveRuns.get(pipelineId) as Row).n;
  }

  async ledger(pipelineId: string, from: number, to: number): Promise<{ runs: RunRecord[]; skipped: SkippedInterval[] }> {
    return {
      runs: (this.q.selectRunsInRange.all(pipelineId, from, to) as Row[]).map(toRun),
      skipped: (this.q.selectSkippedInRange.all(pipelineId, from, to) as Row[]).map(toSkippedInterval),
    };
  }

  async listPools(): Promise<PoolUsage[]> {
    return poolUsage(this.q.selectPools.all() as Row[], this.q.selectPoolHolders.all() as Row[], this.q.remotePoolHolders.all() as Row[]);
  }

  async listWorkers(): Promise<WorkerRecord[]> {
    return (this.q.selectWorkers.all() as Row[]).map(toWorker);
  }

  async listExpiredAttempts(now: number, limit: number): Promise<ExpiredAttempt[]> {
    return (this.q.selectExpiredAttempts.all(now, limit) as Row[]).map(toExpiredAttempt);
  }

  async getLead(role: string): Promise<Leadership | null> {
    const row = this.q.selectLease.get(role) as Row | undefined;
    return row ? toLeadership(row, row.holder) : null;
  }

  async listDatasetEvents(query: { dataset?: string; limit?: number }): Promise<DatasetEvent[]> {
    const limit = query.limit ?? 100;
    const rows = (query.dataset ? this.q.selectDatasetEventsOf.all(query.dataset, limit) : this.q.selectDatasetEvents.all(limit)) as Row[];
    return rows.map(toDatasetEvent);
  }

  async getBackfill(backfillId: string): Promise<BackfillRecord | null> {
    const row = this.q.selectBackfill.get(backfillId) as Row | undefined;
    return row ? toBackfill(row) : null;
  }

  async listBackfills(query: { pipelineId?: string; live?: boolean; limit?: number }): Promise<BackfillRecord[]> {
    const q = this.q;
    const rows = (
      query.live ? q.selectLiveBackfills.all() : query.pipelineId ? q.selectBackfillsOf.all(query.pipelineId, query.limit ?? 50) : q.selectBackfills.all(query.limit ?? 50)
    ) as Row[];
    return rows.map(toBackfill).filter((b) => !query.pipelineId || b.pipelineId === query.pipelineId);
  }

  async backfillItems(backfillId: string): Promise<BackfillItem[]> {
    return (this.q.selectBackfillItems.all(backfillId) as Row[]).map(toBackfillItem);
  }

  async pendingBackfillItems(backfillId: string, limit: number): Promise<BackfillItem[]> {
    return (this.q.selectPendingBackfillItems.all(backfillId, limit) as Row[]).map(toBackfillItem);
  }

  async countLiveBackfillRuns(backfillId: string): Promise<number> {
    return (this.q.countLiveBackfillRuns.get(backfillId) as Row).n;
  }

  async backfillProgress(backfillId: string): Promise<BackfillProgress> {
    const c = this.q.backfillItemCounts.get(backfillId) as Row;
    const runs = this.q.backfillRunStates.all(backfillId) as { state: RunState; n: number }[];
    return backfillProgress({ planned: c.planned, notStarted: c.not_started, untouched: c.untouched }, runs);
  }

  async mappedItemCounts(pipelineId: string, taskIds: readonly string[], runs: number): Promise<Map<string, number[]>> {
    return countsByTask(this.q.mappedItemCounts.all(pipelineId, runs, JSON.stringify(taskIds)) as Row[]);
  }

  async taskDurations(pipelineId: string, perTask: number): Promise<Map<string, number[]>> {
    return durationsByTask(this.q.taskDurations.all(pipelineId, perTask) as Row[]);
  }

  async listFreshness(dataset: string, fromDate: string, toDate: string): Promise<FreshnessRecord[]> {
    return (this.q.selectFreshnessRange.all(dataset, fromDate, toDate) as Row[]).map(toFreshness);
  }

  async freshnessHistory(dataset: string, businessDate: string): Promise<FreshnessPublication[]> {
    return (this.q.selectFreshnessHistory.all(dataset, businessDate) as Row[]).map(toFreshnessPublication);
  }

  async getIncident(key: string): Promise<Incident | null> {
    const row = this.q.selectIncident.get(key) as Row | undefined;
    return row ? toIncident(row) : null;
  }

  async promiseFirstSeen(pipelineId: string, dataset: string): Promise<number | null> {
    return ((this.q.selectPromiseFirstSeen.get(pipelineId, dataset) as Row | undefined)?.first_seen as number | null | undefined) ?? null;
  }

  async listIncidents(query: { open?: boolean; limit?: number }): Promise<Incident[]> {
    const rows = (query.open ? this.q.selectOpenIncidents : this.q.selectIncidents).all(query.limit ?? 100) as Row[];
    return rows.map(toIncident);
  }

  async dueAlerts(now: number, limit: number): Promise<OutboxAlert[]> {
    return (this.q.selectDueAlerts.all(now, limit) as Row[]).map(toOutboxAlert);
  }

  async failedRunsSince(since: number): Promise<RunRecord[]> {
    return (this.q.selectFailedRunsSince.all(since) as Row[]).map(toRun);
  }

  async getWatermark(pipelineId: string, taskId: string): Promise<string | number | null> {
    const row = this.q.selectWatermark.get(pipelineId, taskId) as Row | undefined;
    return row ? watermarkValue(row) : null;
  }

  async getRun(runId: string): Promise<RunRecord | null> {
    const row = this.q.selectRun.get(runId) as Row | undefined;
    return row ? toRun(row) : null;
  }

  async listRuns(query: RunQuery): Promise<RunRecord[]> {
    const limit = query.limit ?? 100;
    const rows = (
      query.pipelineId ? this.q.selectRunsOfPipeline.all(query.pipelineId, limit) : this.q.selectRuns.all(limit)
    ) as Row[];
    const runs = rows.map(toRun);
    return query.states ? runs.filter((r) => query.states!.includes(r.state)) : runs;
  }

  async listTaskInstances(runId: string): Promise<TaskInstanceRecord[]> {
    return (this.q.selectTaskInstances.all(runId) as Row[]).map(toTaskInstance);
  }

  async getTaskInstance(runId: string, taskId: string): Promise<TaskInstanceRecord | null> {
    const row = this.q.selectTaskInstance.get(runId, taskId) as Row | undefined;
    return row ? toTaskInstance(row) : null;
  }

  async listAttempts(runId: string, taskId?: string): Promise<AttemptRecord[]> {
    const rows = (taskId ? this.q.selectAttemptsOfTask.all(runId, taskId) : this.q.selectAttempts.all(runId)) as Row[];
    return rows.map(toAttempt);
  }

  async nextRetryAt(runId: string): Promise<number | null> {
    return ((this.q.nextRetryAt.get(runId) as Row).at as number | null) ?? null;
  }

  async listAudit(query: AuditQuery): Promise<AuditEntry[]> {
    const limit = query.limit ?? 100;
    const rows = (
      query.pipelineId ? this.q.selectAuditOfPipeline.all(query.pipelineId, limit) : this.q.selectAudit.all(limit)
    ) as Row[];
    return rows.map(toAuditEntry);
  }

  async findToken(tokenHash: string): Promise<ApiTokenRecord | null> {
    const row = this.q.selectLiveToken.get(tokenHash) as Row | undefined;
    return row ? toApiToken(row) : null;
  }

  async listTokens(query: { includeRevoked?: boolean }): Promise<ApiTokenRecord[]> {
    return ((query.includeRevoked ? this.q.selectAllTokens : this.q.selectLiveTokens).all() as Row[]).map(toApiToken);
  }

  async hasTokens(): Promise<boolean> {
    return (this.q.anyLiveToken.get() as Row).found === 1;
  }

  async readChanges(afterId: number, limit: number): Promise<ChangeEvent[]> {
    return (this.q.selectChanges.all(afterId, limit) as Row[]).map(toChangeEvent);
  }

  async changeBounds(): Promise<{ newest: number; oldest: number | null }> {
    const row = this.q.changeBounds.get() as Row;
    return { newest: row.newest, oldest: row.oldest };
  }

  async pageRuns(query: RunPageQuery): Promise<RunRecord[]> {
    const params = {
      pipelineId: query.pipelineId,
      before: Math.min(query.beforeStart ?? FAR, query.toStart ?? FAR),
      from: query.fromStart ?? -FAR,
      states: query.states ? JSON.stringify(query.states) : null,
      triggers: query.triggers ? JSON.stringify(query.triggers) : null,
      limit: query.limit,
    };
    const rows = query.codeVersion === undefined ? this.q.pageRuns.all(params) : this.q.pageRunsOfCode.all({ ...params, codeVersion: query.codeVersion });
    return (rows as Row[]).map(toRun);
  }

  async taskInstancesOfRuns(runIds: readonly string[]): Promise<TaskInstanceRecord[]> {
    if (runIds.length === 0) return [];
    return (this.q.taskInstancesOfRuns.all(JSON.stringify(runIds)) as Row[]).map(toTaskInstance);
  }

  async pageAudit(query: AuditPageQuery): Promise<AuditEntry[]> {
    return (this.q.pageAudit.all({
      before: query.beforeId ?? FAR,
      from: query.fromAt ?? -FAR,
      to: query.toAt ?? FAR,
      pipelineId: query.pipelineId ?? null,
      actor: query.actor ?? null,
      action: query.action ?? null,
      limit: query.limit,
    }) as Row[]).map(toAuditEntry);
  }

  async pageDatasetEvents(query: { dataset?: string; beforeId?: number; limit: number }): Promise<DatasetEvent[]> {
    return (this.q.pageDatasetEvents.all({ before: query.beforeId ?? FAR, dataset: query.dataset ?? null, limit: query.limit }) as Row[]).map(toDatasetEvent);
  }

  async pageIncidents(query: { open?: boolean; before?: { openedAt: number; key: string }; limit: number }): Promise<Incident[]> {
    return (this.q.pageIncidents.all({
      beforeAt: query.before?.openedAt ?? FAR,
      beforeKey: query.before?.key ?? "",
      open: query.open === undefined ? null : query.open ? 1 : 0,
      limit: query.limit,
    }) as Row[]).map(toIncident);
  }

  async listWatermarks(pipelineId?: string): Promise<WatermarkRecord[]> {
    return (this.q.selectWatermarks.all({ pipelineId: pipelineId ?? null }) as Row[]).map(toWatermark);
  }

  async pageAlerts(query: AlertPageQuery): Promise<AlertRecord[]> {
    return (this.q.pageAlerts.all({
      before: query.beforeId ?? FAR, pipelineId: query.pipelineId ?? null, incidentKey: query.incidentKey ?? null, state: query.state ?? null, limit: query.limit,
    }) as Row[]).map(toAlertRecord);
  }

  async auditOfRun(query: { runId: string; actions?: readonly string[]; limit: number }): Promise<AuditEntry[]> {
    return (this.q.auditOfRun.all({ runId: query.runId, actions: query.actions ? JSON.stringify(query.actions) : null, limit: query.limit }) as Row[]).map(toAuditEntry);
  }

  async taskStatesOfRuns(runIds: readonly string[]): Promise<TaskStateCell[]> {
    if (runIds.length === 0) return [];
    return (this.q.taskStatesOfRuns.all(JSON.stringify(runIds)) as Row[]).map((r) => ({ runId: r.run_id, taskId: r.task_id, state: r.state, tryNumber: r.try_number, mapped: mappedStateCounts(r) }));
  }

  async taskRowsOfRun(runId: string): Promise<TaskInstanceRecord[]> {
    return (this.q.taskRowsOfRun.all(runId) as Row[]).map(toTaskInstance);
  }

  async attemptsOfTaskRows(runId: string): Promise<AttemptRecord[]> {
    return (this.q.attemptsOfTaskRows.all(runId) as Row[]).map(toAttempt);
  }

  async liveRunCounts(): Promise<RunStateCount[]> {
    return (this.q.metricLiveRuns.all() as Row[]).map(toRunStateCount);
  }

  async recentRunCounts(query: { pipelineIds: readonly string[]; fromStart: number }): Promise<RunStateCount[]> {
    return (this.q.metricRecentRuns.all(JSON.stringify(query.pipelineIds), query.fromStart) as Row[]).map(toRunStateCount);
  }

  async liveRunTaskCounts(): Promise<TaskStateCount[]> {
    return (this.q.metricTaskInstancesOfLiveRuns.all() as Row[]).map(toTaskStateCount);
  }

  async queuedByPool(): Promise<PoolQueue[]> {
    return (this.q.metricQueuedByPool.all() as Row[]).map(toPoolQueue);
  }

  async openIncidentCounts(): Promise<IncidentCount[]> {
    return (this.q.metricOpenIncidents.all() as Row[]).map(toIncidentCount);
  }
}
