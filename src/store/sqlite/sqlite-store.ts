import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { decideTrigger, type TriggerRule, type UpstreamCounts } from "../../core/policy/trigger-rules.ts";
import type { RunState, TaskState } from "../../core/model/states.ts";
import {
  MAX_SUMMARY_BYTES,
  StoreConflictError,
  type AttemptFinish,
  type AttemptRecord,
  type AuditEntry,
  type AuditQuery,
  type ClaimRequest,
  type ClaimedAttempt,
  type FinishOutcome,
  type NewAuditEntry,
  type NewPipelineVersion,
  type NewRun,
  type NewTaskInstance,
  type PipelineVersionRecord,
  type RerunRequest,
  type RunQuery,
  type RunRecord,
  type Store,
  type TaskInstanceRecord,
} from "../port.ts";
import { MIGRATIONS } from "./migrations.ts";
import { SQL } from "./sql.ts";

type Row = Record<string, any>;
type Statements = { [K in keyof typeof SQL]: Database.Statement };

/**
 * The single-machine store: one SQLite file in WAL mode, so several processes (scheduler,
 * workers, CLI) share it. better-sqlite3 is synchronous; every port method is one transaction.
 */
export class SqliteStore implements Store {
  readonly db: Database.Database;
  #sql: Statements | null = null;

  constructor(path: string) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("busy_timeout = 10000");
    this.db.pragma("foreign_keys = ON");
  }

  get #q(): Statements {
    if (!this.#sql) throw new Error("SqliteStore: call migrate() before use");
    return this.#sql;
  }

  async migrate(): Promise<void> {
    this.db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    // IMMEDIATE takes the write lock first, so two processes starting together migrate once.
    this.db
      .transaction(() => {
        const applied = new Set(
          (this.db.prepare("SELECT version FROM schema_migrations").all() as Row[]).map((r) => r.version as number),
        );
        for (const migration of MIGRATIONS) {
          if (applied.has(migration.version)) continue;
          this.db.exec(migration.sql);
          this.db
            .prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)")
            .run(migration.version, migration.name, Date.now());
        }
      })
      .immediate();
    this.#sql = Object.fromEntries(
      Object.entries(SQL).map(([name, text]) => [name, this.db.prepare(text)]),
    ) as Statements;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  async savePipelineVersion(v: NewPipelineVersion): Promise<void> {
    this.db.transaction(() => {
      const inserted = this.#q.insertPipelineVersion.run(v.pipelineId, v.version, JSON.stringify(v.definition), v.createdAt);
      if (inserted.changes === 0) return;
      for (const edge of v.edges) this.#q.insertEdge.run(v.version, edge.parent, edge.child);
    })();
  }

  async getPipelineVersion(pipelineId: string, version: string): Promise<PipelineVersionRecord | null> {
    const row = this.#q.selectPipelineVersion.get(pipelineId, version) as Row | undefined;
    return row
      ? { pipelineId: row.pipeline_id, version: row.version, definition: JSON.parse(row.definition), createdAt: row.created_at }
      : null;
  }

  async createRunIfAbsent(run: NewRun): Promise<{ run: RunRecord; created: boolean }> {
    return this.db.transaction(() => {
      const inserted = this.#q.insertRun.run({
        ...run,
        params: JSON.stringify(run.params),
      });
      if (inserted.changes === 0) {
        const existing = (this.#q.selectRun.get(run.runId) ??
          this.#q.selectRunByInterval.get(run.pipelineId, run.intervalStart, run.intervalEnd)) as Row;
        return { run: toRun(existing), created: false };
      }
      for (const task of run.tasks) this.#insertTaskInstance(run.runId, task, run.createdAt);
      return { run: toRun(this.#q.selectRun.get(run.runId) as Row), created: true };
    })();
  }

  #insertTaskInstance(runId: string, task: NewTaskInstance, at: number): void {
    this.#q.insertTaskInstance.run({
      runId,
      taskId: task.taskId,
      state: task.hasUpstream ? "scheduled" : "queued",
      maxTries: task.maxTries,
      triggerRule: task.triggerRule,
      pool: task.pool,
      slots: task.slots,
      priority: task.priority,
      queuedAt: task.hasUpstream ? null : at,
    });
  }

  async rerun(request: RerunRequest): Promise<RunRecord> {
    return this.db.transaction(() => {
      const q = this.#q;
      const run = q.selectRun.get(request.runId) as Row | undefined;
      if (!run) throw new StoreConflictError(`no run ${request.runId}`);
      if ((q.countRunning.get(request.runId) as Row).n > 0) {
        throw new StoreConflictError(`run ${request.runId} has a task running; wait for it to finish`);
      }
      const existing = new Map(
        (q.selectTaskInstances.all(request.runId) as Row[]).map((r) => [r.task_id as string, r]),
      );
      const wanted = new Map(request.tasks.map((t) => [t.taskId, t]));
      const toReset = request.taskIds ? new Set(request.taskIds) : new Set(wanted.keys());
      for (const taskId of toReset) {
        if (!wanted.has(taskId)) throw new StoreConflictError(`run ${request.runId} has no task ${taskId}`);
      }
      if (!request.taskIds) {
        for (const taskId of existing.keys()) if (!wanted.has(taskId)) q.deleteTaskInstance.run(request.runId, taskId);
      }
      for (const task of request.tasks) {
        if (!existing.has(task.taskId)) this.#insertTaskInstance(request.runId, task, request.at);
        else if (toReset.has(task.taskId)) {
          q.resetTaskInstance.run({ runId: request.runId, ...task });
        }
      }
      q.requeueRun.run(request.graphVersion, JSON.stringify(request.params), request.runId);
      // Reset tasks whose upstream allows it become eligible now; the rest wait for their parents.
      for (const taskId of toReset) this.#settleWaiting(request.runId, request.graphVersion, taskId, request.at);
      this.#finishRunIfDone(request.runId, request.at);
      return toRun(q.selectRun.get(request.runId) as Row);
    })();
  }

  async claimReady(request: ClaimRequest): Promise<ClaimedAttempt[]> {
    return this.db.transaction(() => {
      const q = this.#q;
      const candidates: Row[] = request.runId
        ? (q.selectClaimableInRun.all(request.runId, request.now, request.limit) as Row[])
        : [
            ...(q.selectClaimableWaiting.all(request.now, request.limit) as Row[]),
            ...(q.selectClaimableQueued.all(request.limit) as Row[]),
          ].slice(0, request.limit);
      const claimed: ClaimedAttempt[] = [];
      const runs = new Map<string, Row>();
      for (const c of candidates) {
        const tryNumber = (c.try_number as number) + 1;
        const logPath = request.logPath(c.run_id, c.task_id, tryNumber);
        const leaseExpiresAt = request.now + request.leaseMs;
        const attemptId = Number(
          q.insertAttempt.run(c.run_id, c.task_id, tryNumber, request.workerId, request.pid, request.now, leaseExpiresAt, logPath)
            .lastInsertRowid,
        );
        q.startTaskInstance.run(attemptId, request.now, c.run_id, c.task_id);
        let run = runs.get(c.run_id);
        if (!run) {
          q.markRunRunning.run(request.now, c.run_id);
          run = q.selectRun.get(c.run_id) as Row;
          runs.set(c.run_id, run);
        }
        claimed.push({
          attemptId,
          runId: c.run_id,
          pipelineId: run.pipeline_id,
          taskId: c.task_id,
          tryNumber,
          maxTries: c.max_tries,
          intervalStart: run.interval_start,
          intervalEnd: run.interval_end,
          businessDate: run.business_date,
          graphVersion: run.graph_version,
          params: JSON.parse(run.params),
          logPath,
          leaseExpiresAt,
        });
      }
      return claimed;
    })();
  }

  async renewLease(attemptId: number, workerId: string, leaseExpiresAt: number): Promise<boolean> {
    return this.#q.renewLease.run(leaseExpiresAt, attemptId, workerId).changes === 1;
  }

  async finishAttempt(f: AttemptFinish): Promise<FinishOutcome> {
    if (f.summary !== null && Buffer.byteLength(f.summary) > MAX_SUMMARY_BYTES) {
      throw new StoreConflictError(
        `summary is ${Buffer.byteLength(f.summary)} bytes; the store keeps at most ${MAX_SUMMARY_BYTES} (counts, not data)`,
      );
    }
    return this.db.transaction((): FinishOutcome => {
      const q = this.#q;
      const a = q.selectAttemptForFinish.get(f.attemptId) as Row | undefined;
      const stale =
        !a || a.state !== "running" || a.worker_id !== f.workerId || a.ti_state !== "running" || a.current_attempt_id !== f.attemptId;
      if (stale) return { accepted: false, taskState: (a?.ti_state as TaskState) ?? null, runState: null };

      q.finishAttempt.run({
        attemptId: f.attemptId,
        state: f.outcome,
        now: f.now,
        exitCode: f.exitCode,
        errorClass: f.errorClass,
        errorMessage: f.errorMessage,
        summary: f.summary,
      });
      let state: TaskState = f.outcome;
      let nextTryAt: number | null = null;
      if (f.outcome === "failed" && f.retryable && a.try_number < a.max_tries) {
        state = "up_for_retry";
        nextTryAt = f.retryAt ?? f.now;
      }
      q.setTaskState.run({
        runId: a.run_id,
        taskId: a.task_id,
        state,
        nextTryAt,
        reason: f.outcome === "skipped" ? f.skipReason : null,
        endedAt: state === "up_for_retry" ? null : f.now,
      });
      if (state !== "up_for_retry") this.#propagate(a.run_id, a.graph_version, a.task_id, f.now);
      const runState = this.#finishRunIfDone(a.run_id, f.now);
      return { accepted: true, taskState: state, runState };
    })();
  }

  /** A task finished: each waiting child may now run, be skipped, or be marked upstream_failed. */
  #propagate(runId: string, graphVersion: string, taskId: string, now: number): void {
    const stack = [taskId];
    while (stack.length > 0) {
      const parent = stack.pop()!;
      for (const { child } of this.#q.selectChildren.all(graphVersion, parent) as Row[]) {
        const settled = this.#settleWaiting(runId, graphVersion, child, now);
        if (settled === "skipped" || settled === "upstream_failed") stack.push(child);
      }
    }
  }

  /** Applies the trigger rule to one waiting task instance; returns its new state, if it changed. */
  #settleWaiting(runId: string, graphVersion: string, taskId: string, now: number): TaskState | null {
    const q = this.#q;
    const ti = q.selectTaskInstance.get(runId, taskId) as Row | undefined;
    if (!ti || ti.state !== "scheduled") return null;
    const counts: UpstreamCounts = { total: 0, success: 0, skipped: 0, failed: 0 };
    for (const row of q.selectUpstreamStates.all(runId, graphVersion, taskId) as Row[]) {
      counts.total += row.n;
      if (row.state === "success") counts.success += row.n;
      else if (row.state === "skipped") counts.skipped += row.n;
      else if (row.state === "failed" || row.state === "upstream_failed") counts.failed += row.n;
    }
    const decision = decideTrigger(ti.trigger_rule as TriggerRule, counts);
    switch (decision.action) {
      case "wait":
        return null;
      case "run":
        q.queueTaskInstance.run(now, runId, taskId);
        return "queued";
      case "skip":
        q.settleTaskInstance.run("skipped", decision.reason, now, runId, taskId);
        return "skipped";
      case "upstream_failed":
        q.settleTaskInstance.run("upstream_failed", decision.reason, now, runId, taskId);
        return "upstream_failed";
    }
  }

  #finishRunIfDone(runId: string, now: number): RunState | null {
    const q = this.#q;
    if ((q.countLiveInRun.get(runId) as Row).n > 0) return null;
    const state: RunState = (q.countFailedInRun.get(runId) as Row).n > 0 ? "failed" : "success";
    q.finishRun.run(state, now, runId);
    return state;
  }

  async getRun(runId: string): Promise<RunRecord | null> {
    const row = this.#q.selectRun.get(runId) as Row | undefined;
    return row ? toRun(row) : null;
  }

  async listRuns(query: RunQuery): Promise<RunRecord[]> {
    const limit = query.limit ?? 100;
    const rows = (
      query.pipelineId ? this.#q.selectRunsOfPipeline.all(query.pipelineId, limit) : this.#q.selectRuns.all(limit)
    ) as Row[];
    const runs = rows.map(toRun);
    return query.states ? runs.filter((r) => query.states!.includes(r.state)) : runs;
  }

  async listTaskInstances(runId: string): Promise<TaskInstanceRecord[]> {
    return (this.#q.selectTaskInstances.all(runId) as Row[]).map(toTaskInstance);
  }

  async listAttempts(runId: string, taskId?: string): Promise<AttemptRecord[]> {
    const rows = (taskId ? this.#q.selectAttemptsOfTask.all(runId, taskId) : this.#q.selectAttempts.all(runId)) as Row[];
    return rows.map(toAttempt);
  }

  async nextRetryAt(runId: string): Promise<number | null> {
    return ((this.#q.nextRetryAt.get(runId) as Row).at as number | null) ?? null;
  }

  async appendAudit(e: NewAuditEntry): Promise<void> {
    this.#q.insertAudit.run({
      at: e.at,
      actor: e.actor,
      action: e.action,
      pipelineId: e.pipelineId,
      runId: e.runId ?? null,
      taskId: e.taskId ?? null,
      reason: e.reason ?? null,
      graphVersion: e.graphVersion ?? null,
      details: JSON.stringify(e.details ?? {}),
    });
  }

  async listAudit(query: AuditQuery): Promise<AuditEntry[]> {
    const limit = query.limit ?? 100;
    const rows = (
      query.pipelineId ? this.#q.selectAuditOfPipeline.all(query.pipelineId, limit) : this.#q.selectAudit.all(limit)
    ) as Row[];
    return rows.map((r) => ({
      id: r.id,
      at: r.at,
      actor: r.actor,
      action: r.action,
      pipelineId: r.pipeline_id,
      runId: r.run_id,
      taskId: r.task_id,
      reason: r.reason,
      graphVersion: r.graph_version,
      details: JSON.parse(r.details),
    }));
  }
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
    params: JSON.parse(r.params),
    createdAt: r.created_at,
    startedAt: r.started_at,
    endedAt: r.ended_at,
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
    summary: r.summary === null ? null : JSON.parse(r.summary),
  };
}
