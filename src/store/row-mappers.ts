import type {
  ApiTokenRecord,
  ChangeEvent,
  CodeVersionRecord,
  CodeVersionUse,
  WatermarkRecord,
  AttemptRecord,
  AuditEntry,
  DatasetEvent,
  ExpiredAttempt,
  FreshnessPublication,
  FreshnessRecord,
  OutboxAlert,
  SkippedInterval,
  WorkerRecord,
  BackfillItem,
  ClaimedAttempt,
  BackfillRecord,
  Incident,
  Leadership,
  PipelineState,
  RunRecord,
  TaskInstanceRecord,
  MappedInstanceRecord,
  MappedStateCounts,
  ExternalJobRecord,
} from "./port.ts";
import { TASK_STATES, type TaskState } from "../core/model/states.ts";

export type Row = Record<string, any>;

/** A mapped task's row's counts by state (migration 33); null for a row that is not an expanded mapped task. */
export function mappedStateCounts(r: Row): MappedStateCounts | null {
  if (r.map_total === null || r.map_total === undefined) return null;
  const counts = {} as Record<TaskState, number>;
  for (const state of TASK_STATES) counts[state] = Number(r[`map_in_${state}`] ?? 0);
  return counts;
}

/** How an adapter's driver hands back booleans and JSON columns. */
export interface RowDecoding {
  bool(value: unknown): boolean;
  json(value: unknown): any;
}

/**
 * Turns rows (snake_case, as both adapters' schemas name their columns) into the port's records.
 * One set of mappers for every adapter, so a record means the same whichever database is behind it.
 */
export function rowMappers(decode: RowDecoding) {
  function toPipelineState(r: Row): PipelineState {
    return {
      pipelineId: r.pipeline_id,
      paused: decode.bool(r.paused),
      pausedNote: r.paused_note,
      pausedBy: r.paused_by,
      pausedAt: r.paused_at,
      scheduleCursor: r.schedule_cursor,
      createdAt: r.created_at,
    };
  }

  function toLeadership(r: Row, asker: string): Leadership {
    return { role: r.role, leader: r.holder === asker, holder: r.holder, term: r.term, expiresAt: r.expires_at, renewedAt: r.renewed_at };
  }

  function toIncident(r: Row): Incident {
    return {
      key: r.incident_key,
      kind: r.kind,
      dataset: r.dataset,
      pipelineId: r.pipeline_id,
      businessDate: r.business_date,
      runId: r.run_id,
      message: r.message,
      notify: decode.json(r.notify),
      openedAt: r.opened_at,
      acknowledgement: r.acknowledged_at === null || r.acknowledged_at === undefined
        ? null
        : { at: r.acknowledged_at, by: r.acknowledged_by, reason: r.ack_reason, until: r.ack_until ?? null },
      resolvedAt: r.resolved_at,
      resolvedBy: r.resolved_by ?? null,
      resolution: r.resolution,
      reopenedFor: r.reopened_for ?? null,
    };
  }

  function toBackfill(r: Row): BackfillRecord {
    return {
      backfillId: r.backfill_id,
      pipelineId: r.pipeline_id,
      state: r.state,
      fromDate: r.from_date,
      toDate: r.to_date,
      reprocess: r.reprocess,
      maxActiveRuns: r.max_active_runs,
      backwards: decode.bool(r.backwards),
      taskIds: decode.json(r.task_ids),
      actor: r.actor,
      reason: r.reason,
      graphVersion: r.graph_version,
      estimate: decode.json(r.estimate),
      codeChoice: r.code_choice ?? "latest",
      createdAt: r.created_at,
      updatedAt: r.updated_at,
      endedAt: r.ended_at,
    };
  }

  function toBackfillItem(r: Row): BackfillItem {
    return {
      backfillId: r.backfill_id,
      seq: r.seq,
      businessDate: r.business_date,
      intervalStart: r.interval_start,
      intervalEnd: r.interval_end,
      action: r.action,
      why: r.why,
      runId: r.run_id,
      started: decode.bool(r.started),
    };
  }

  function toRun(r: Row): RunRecord {
    return {
      runId: r.run_id,
      pipelineId: r.pipeline_id,
      intervalStart: r.interval_start,
      intervalEnd: r.interval_end,
      businessDate: r.business_date,
      state: r.state,
      trigger: r.trigger_kind,
      triggeredBy: r.triggered_by,
      reason: r.reason,
      graphVersion: r.graph_version,
      params: decode.json(r.params),
      createdAt: r.created_at,
      startedAt: r.started_at,
      endedAt: r.ended_at,
      backfillId: r.backfill_id,
      restateCount: r.restate_count ?? 0,
      restatedAt: r.restated_at ?? null,
      restateNote: r.restate_note ?? null,
      codeVersion: r.code_version ?? null,
    };
  }

  function toTaskInstance(r: Row): TaskInstanceRecord {
    return {
      runId: r.run_id,
      taskId: r.task_id,
      state: r.state,
      tryNumber: r.try_number,
      maxTries: r.max_tries,
      nextTryAt: r.next_try_at,
      triggerRule: r.trigger_rule,
      pool: r.pool,
      slots: r.slots,
      priority: r.priority,
      reason: r.reason,
      startedAt: r.started_at,
      endedAt: r.ended_at,
      mapped: r.map_total === null || r.map_total === undefined ? null : { live: Number(r.map_live), failing: Number(r.map_failing), total: Number(r.map_total), states: mappedStateCounts(r)!,
        maxActive: r.map_max_active === null || r.map_max_active === undefined ? null : Number(r.map_max_active) },
      heldAt: r.map_held_at === null || r.map_held_at === undefined ? null : Number(r.map_held_at),
    };
  }

  function toMappedInstance(r: Row): MappedInstanceRecord {
    return {
      taskId: r.task_id,
      key: r.map_key,
      position: Number(r.map_position),
      item: r.map_item,
      state: r.state,
      tryNumber: r.try_number,
      reason: r.reason,
      startedAt: r.started_at === null || r.started_at === undefined ? null : Number(r.started_at),
      endedAt: r.ended_at === null || r.ended_at === undefined ? null : Number(r.ended_at),
      summary: r.summary === null || r.summary === undefined ? null : JSON.parse(r.summary),
    };
  }

  function toAttempt(r: Row): AttemptRecord {
    return {
      attemptId: r.attempt_id,
      runId: r.run_id,
      taskId: r.task_id,
      tryNumber: r.try_number,
      state: r.state,
      workerId: r.worker_id,
      pid: r.pid,
      startedAt: r.started_at,
      endedAt: r.ended_at,
      leaseExpiresAt: r.lease_expires_at,
      exitCode: r.exit_code,
      errorClass: r.error_class,
      errorMessage: r.error_message,
      logPath: r.log_path,
      // Both adapters keep a summary as text, byte for byte as the task wrote it.
      summary: r.summary === null ? null : JSON.parse(r.summary),
    };
  }

  function toSkippedInterval(r: Row): SkippedInterval {
    return { pipelineId: r.pipeline_id, intervalStart: r.interval_start, intervalEnd: r.interval_end, businessDate: r.business_date, reason: r.reason, at: r.at };
  }

  function toWorker(w: Row): WorkerRecord {
    return { workerId: w.worker_id, host: w.host, pid: w.pid, concurrency: w.concurrency, startedAt: w.started_at, lastSeen: w.last_seen };
  }

  function toExpiredAttempt(a: Row): ExpiredAttempt {
    return {
      attemptId: a.attempt_id,
      runId: a.run_id,
      pipelineId: a.pipeline_id,
      taskId: a.task_id,
      tryNumber: a.try_number,
      workerId: a.worker_id,
      leaseExpiresAt: a.lease_expires_at,
    };
  }

  function toDatasetEvent(e: Row): DatasetEvent {
    const base = { id: Number(e.id), dataset: e.dataset, businessDate: e.business_date, at: Number(e.at) };
    if (e.source === "run") return { ...base, source: "run", runId: e.run_id, pipelineId: e.pipeline_id, taskId: e.task_id, trigger: e.trigger_kind };
    return { ...base, source: e.source, actor: e.actor, idempotencyKey: e.idempotency_key, summary: e.summary };
  }


  function toFreshness(r: Row): FreshnessRecord {
    return {
      dataset: r.dataset,
      businessDate: r.business_date,
      publishedAt: r.published_at,
      firstPublishedAt: r.first_published_at,
      pipelineId: r.pipeline_id,
      runId: r.run_id,
      taskId: r.task_id,
      summary: r.summary === null ? null : JSON.parse(r.summary),
      emptyReason: r.empty_reason,
    };
  }

  function toFreshnessPublication(r: Row): FreshnessPublication {
    return {
      dataset: r.dataset, businessDate: r.business_date, publishedAt: r.published_at, runId: r.run_id, emptyReason: r.empty_reason,
      trigger: r.trigger_kind ?? null, summary: r.summary === null || r.summary === undefined ? null : JSON.parse(r.summary),
    };
  }

  function toOutboxAlert(r: Row): OutboxAlert {
    return { id: r.id, incidentKey: r.incident_key, event: r.event, notifier: r.notifier, payload: decode.json(r.payload), tries: r.tries };
  }

  function toAuditEntry(r: Row): AuditEntry {
    return {
      id: r.id,
      at: r.at,
      actor: r.actor,
      action: r.action,
      pipelineId: r.pipeline_id,
      runId: r.run_id,
      taskId: r.task_id,
      reason: r.reason,
      graphVersion: r.graph_version,
      details: decode.json(r.details),
    };
  }

  function toApiToken(r: Row): ApiTokenRecord {
    return {
      tokenHash: r.token_hash,
      name: r.name,
      role: r.role,
      createdAt: r.created_at,
      createdBy: r.created_by,
      revokedAt: r.revoked_at,
      revokedBy: r.revoked_by,
    };
  }

  function toChangeEvent(r: Row): ChangeEvent {
    return {
      id: r.id,
      kind: r.kind,
      state: r.state,
      runId: r.run_id,
      taskId: r.task_id,
      tryNumber: r.try_number,
      pipelineId: r.pipeline_id,
      businessDate: r.business_date,
      incidentKey: r.incident_key,
      incidentKind: r.incident_kind,
      dataset: r.dataset,
    };
  }

  /** A started attempt (attempt, task instance and run columns), as the worker needs it. */
  function toClaimedAttempt(r: Row, leaseExpiresAt: number): ClaimedAttempt {
    return {
      attemptId: Number(r.attempt_id),
      runId: r.run_id,
      pipelineId: r.pipeline_id,
      taskId: r.task_id,
      tryNumber: r.try_number,
      maxTries: r.max_tries,
      intervalStart: r.interval_start,
      intervalEnd: r.interval_end,
      businessDate: r.business_date,
      graphVersion: r.graph_version,
      params: decode.json(r.params),
      logPath: r.log_path,
      leaseExpiresAt,
      firstStartedAt: r.started_at,
      trigger: r.trigger_kind,
      backfillId: r.backfill_id,
      readySince: r.waited_since === null || r.waited_since === undefined ? null : Number(r.waited_since),
      codeVersion: r.code_version ?? null,
      mapKey: r.map_key ?? null,
      mapItem: r.map_item ?? null,
    };
  }

  function toCodeVersion(r: Row): CodeVersionRecord {
    return {
      pipelineId: r.pipeline_id, codeVersion: r.code_version, graphVersion: r.graph_version, file: r.file, location: r.location,
      packages: decode.json(r.packages), createdAt: Number(r.created_at), createdBy: r.created_by ?? null,
    };
  }

  function toCodeVersionUse(r: Row): CodeVersionUse {
    return {
      ...toCodeVersion(r), runs: Number(r.runs), firstRanAt: r.first_ran_at === null ? null : Number(r.first_ran_at),
      firstDate: r.first_date ?? null, lastDate: r.last_date ?? null,
      collectedAt: r.collected_at === null || r.collected_at === undefined ? null : Number(r.collected_at),
    };
  }

  function toWatermark(r: Row): WatermarkRecord {
    return { pipelineId: r.pipeline_id, taskId: r.task_id, value: r.kind === "number" ? Number(r.value) : r.value, updatedAt: r.updated_at };
  }

  return {
    toSkippedInterval, toWorker, toExpiredAttempt, toDatasetEvent, toFreshness, toFreshnessPublication, toOutboxAlert, toAuditEntry,
    toPipelineState, toLeadership, toIncident, toBackfill, toBackfillItem, toRun, toTaskInstance, toAttempt,
    toApiToken, toChangeEvent, toWatermark, toClaimedAttempt, toCodeVersion, toCodeVersionUse, toMappedInstance };
}

/** A watermark is stored as text with its kind, the same in every adapter. */
export function watermarkValue(row: Record<string, unknown>): string | number {
  return row.kind === "number" ? Number(row.value) : (row.value as string);
}

/** An external job's row, the same in both adapters (the handle is JSON text in both). */
export function toExternalJob(r: Row): ExternalJobRecord {
  return {
    jobId: Number(r.job_id),
    runId: r.run_id,
    pipelineId: r.pipeline_id,
    taskId: r.task_id,
    attemptId: Number(r.attempt_id),
    tryNumber: Number(r.try_number),
    key: r.job_key,
    handle: r.handle,
    adapter: r.adapter,
    link: r.link ?? null,
    state: r.state,
    submittedAt: Number(r.submitted_at),
    endedAt: r.ended_at === null || r.ended_at === undefined ? null : Number(r.ended_at),
    note: r.note ?? null,
    heldPool: r.held_pool ?? null,
    heldSlots: Number(r.held_slots ?? 0),
  };
}
