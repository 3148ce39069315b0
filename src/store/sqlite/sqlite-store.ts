import { collectedCodeMessage } from "../../core/policy/bundle-retention.ts";
import type { CodeVersionRecord } from "../port.ts";
import type { RecordFrozenPeriods, RecordedFrozenPeriods } from "../port.ts";
import { toExternalJob, watermarkValue } from "../row-mappers.ts";
import type { EndExternalJob, ExternalJobRecord, NewExternalJob } from "../port.ts";
import type { ExternalDatasetEvent, ExternalDatasetEventRecorded, NewExternalDatasetEvent } from "../port.ts";
import type Database from "better-sqlite3";
import type { RunState, TaskState } from "../../core/model/states.ts";
import { attemptLogPath } from "../../core/model/log-path.ts";
import { holderKey, planClaim, withRemoteHolds } from "../../core/policy/claim-plan.ts";
import { planRerun } from "../../core/policy/rerun-plan.ts";
import { endTry, nextTryNumber, reopenedByHand, runEnd, RunProgress, settleByHandRefusal, type Settlement } from "../../core/policy/run-progress.ts";
import { assertSummaryFits, claimCandidate, datasetWaits, isCurrentAttempt, remoteHolder, waitingTasks } from "../decision-rows.ts";
import {
  StoreConflictError, type AttemptFinish, type AuditEntry, type ClaimRequest,
  type ClaimedAttempt, type FinishOutcome, type FinishAndClaim, type FinishedAndClaimed, type NewAuditEntry, type NewPipelineVersion, type NewRun, type NewTaskInstance,
  type RerunRequest, type KeyClearRequest, type KeyMarkRequest, type RunRecord, type Store, type TaskInstanceRecord, type PipelineState,
  type PauseRequest, type SkipIntervalsRequest, type MappedInstanceQuery, type MappedInstanceRecord, type Leadership, type TaskActionRequest, type NewBackfill, type BackfillRecord, type BackfillState, type NewIncident, type Incident, type IncidentActionRequest, type AlertEvent, type NewApiToken, type ApiTokenRecord
} from "../port.ts";
import { assertRestatable } from "../restatable.ts";
import { expansionWrites, REMOVED_REASON } from "../mapping-rows.ts";
import { admitUnderMaxActive, holdsMaxActivePlace, mappedTaskEnd, mappedTaskId, markReopensMappedTask, parseMappedTaskId, type MappedItem } from "../../core/policy/fan-out.ts";
import { matchedKeys, planKeyClear } from "../../core/policy/key-clear.ts";
import { planKeyMark } from "../../core/policy/key-mark.ts";
import { keyLookup } from "../../core/policy/key-selector.ts";
import { openWalDatabase } from "../../sqlite/open-wal.ts";
import { auditActionOf, decideIncidentAction, reopenDue, SYSTEM_ACTOR } from "../../core/policy/incident-lifecycle.ts";
import { incidentAudit } from "../incident-audit.ts";
import { MIGRATIONS } from "./migrations.ts";
import { mappers, SqliteReads, type Statements } from "./reads.ts";
import { SQL } from "./sql.ts";

type Row = Record<string, any>;

/**
 * The single-machine store: one SQLite file in WAL mode, so several processes (scheduler,
 * workers, CLI) share it. better-sqlite3 is synchronous; every port method is one transaction.
 * Writing transactions start IMMEDIATE: a deferred one that reads first and writes later fails
 * at once with "database is locked" when another process wrote in between, whatever the timeout.
 */
export class SqliteStore extends SqliteReads implements Store {
  readonly db: Database.Database;
  readonly #pendingFinishes: { finish: AttemptFinish; resolve: (o: FinishOutcome) => void; reject: (e: unknown) => void }[] = [];
  constructor(path: string, options: { busyTimeoutMs?: number } = {}) {
    super();
    this.db = openWalDatabase(path, options.busyTimeoutMs);
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("foreign_keys = ON");
    // Statement journals and temporary B-trees (an ORDER BY of children, a savepoint's journal)
    // in memory, not in temporary files: a quarter of the store's CPU per task, measured. The
    // database and its WAL are untouched by it, so a kill -9 loses nothing committed.
    this.db.pragma("temp_store = MEMORY");
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
    this.statements = Object.fromEntries(
      Object.entries(SQL).map(([name, text]) => [name, this.db.prepare(text)]),
    ) as Statements;
  }

  async close(): Promise<void> {
    if (this.db.open) this.#recordPendingFinishes();
    if (this.db.open) this.db.close();
  }

  async savePipelineVersion(v: NewPipelineVersion): Promise<void> {
    this.db.transaction(() => {
      const inserted = this.q.insertPipelineVersion.run(v.pipelineId, v.version, JSON.stringify(v.definition), v.createdAt);
      if (inserted.changes === 0) return;
      for (const edge of v.edges) this.q.insertEdge.run(v.version, edge.parent, edge.child);
    }).immediate();
  }

  async saveCodeVersion(v: CodeVersionRecord): Promise<void> {
    this.q.insertCodeVersion.run(v.pipelineId, v.codeVersion, v.graphVersion, v.file, v.location, JSON.stringify(v.packages), v.createdAt, v.createdBy);
  }

  async collectCodeVersion(request: { pipelineId: string; codeVersion: string; keepRunsSince: number; at: number }): Promise<boolean> {
    const { pipelineId, codeVersion, keepRunsSince, at } = request;
    return this.db.transaction(() => {
      const row = this.q.selectCodeVersionForCollection.get(pipelineId, codeVersion) as Row | undefined;
      if (!row) return false;
      if (row.collected_at !== null) return true;
      if (this.q.selectCodeVersionNeeded.get(pipelineId, codeVersion, keepRunsSince, keepRunsSince)) return false;
      this.q.markCodeVersionCollected.run(at, pipelineId, codeVersion);
      return true;
    }).immediate();
  }

  async createRunIfAbsent(run: NewRun): Promise<{ run: RunRecord; created: boolean }> {
    return this.db.transaction(() => {
      if (run.codeVersion) {
        const code = this.q.selectCodeVersionForRun.get(run.pipelineId, run.codeVersion) as Row | undefined;
        if (code && code.collected_at !== null) throw new StoreConflictError(collectedCodeMessage(run.pipelineId, run.codeVersion));
      }
      const { cursor, ...fields } = run;
      if (cursor !== undefined) {
        this.q.insertPipelineState.run(run.pipelineId, run.createdAt);
        this.q.advanceCursor.run(cursor, cursor, run.pipelineId);
      }
      const inserted = this.q.insertRun.run({ ...fields, backfillId: fields.backfillId ?? null, codeVersion: fields.codeVersion ?? null, params: JSON.stringify(run.params) });
      if (inserted.changes === 0) {
        const existing = (this.q.selectRun.get(run.runId) ??
          this.q.selectRunByInterval.get(run.pipelineId, run.intervalStart, run.intervalEnd)) as Row;
        return { run: toRun(existing), created: false };
      }
      for (const task of run.tasks) this.#insertTaskInstance(run.runId, task, run.createdAt);
      return { run: toRun(this.q.selectRun.get(run.runId) as Row), created: true };
    }).immediate();
  }

  #insertTaskInstance(runId: string, task: NewTaskInstance, at: number): void {
    this.q.insertTaskInstance.run({
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
      const q = this.q;
      const run = q.selectRun.get(request.runId) as Row | undefined;
      if (!run) throw new StoreConflictError(`no run ${request.runId}`);
      if (request.restate) assertRestatable(run, request.restate.endedBefore);
      const existing = new Map((q.selectTaskInstances.all(request.runId) as Row[]).map((r) => [r.task_id as string, r.state as TaskState]));
      const plan = planRerun(request.runId, existing, request.tasks.map((t) => t.taskId), request.taskIds);
      if (plan.conflict !== undefined) throw new StoreConflictError(plan.conflict);
      for (const taskId of plan.removed) q.deleteTaskInstance.run(request.runId, taskId);
      const added = new Set(plan.added);
      const reset = new Set(plan.reset);
      for (const task of request.tasks) {
        if (added.has(task.taskId)) this.#insertTaskInstance(request.runId, task, request.at);
        else if (reset.has(task.taskId)) q.resetTaskInstance.run({ runId: request.runId, ...task });
      }
      if (request.taskIds) q.reopenRun.run(request.runId);
      else q.requeueRun.run(request.graphVersion, JSON.stringify(request.params), request.runId);
      if (request.backfill) {
        q.joinBackfill.run(request.backfill.backfillId, request.backfill.triggeredBy, request.backfill.reason, request.runId);
      }
      if (request.restate) q.markRestated.run(request.restate.triggeredBy, request.restate.reason, request.at, request.runId);
      const moves = request.codeVersion !== undefined;
      if (moves) q.repinRun.run(request.codeVersion, request.graphVersion, request.runId);
      const graphVersion = request.taskIds && !moves ? (run.graph_version as string) : request.graphVersion;
      // Reset tasks whose upstream allows it become eligible now; the rest wait for their parents.
      const progress = new RunProgress();
      const waiting = q.waitingTasksWithParents.all({ runId: request.runId, graphVersion, taskIds: JSON.stringify(plan.reset) }) as Row[];
      progress.settleEach(plan.reset, waitingTasks(waiting), request.at);
      this.#decideDownstream(request.runId, graphVersion, progress);
      if (!request.resume) q.requestExternalCancels.run(request.restate ? "restated: the run runs again" : "cleared: the task runs again", request.runId);
      this.#finishRunIfDone(request.runId, request.at);
      return toRun(q.selectRun.get(request.runId) as Row);
    }).immediate();
  }

  async clearKeys(request: KeyClearRequest): Promise<{ keys: string[] }> {
    return this.db.transaction(() => {
      const q = this.q;
      const { runId, taskId } = request;
      if (!q.selectRun.get(runId)) throw new StoreConflictError(`no run ${runId}`);
      const counts = q.mapCounts.get(runId, taskId) as Row | undefined;
      const instances = this.#keyCandidates(runId, taskId, request.selector);
      // Only the matched keys' chained instances are read, each by its id.
      const chainStates = new Map<string, TaskState>();
      for (const key of matchedKeys(request.selector, instances)) {
        for (const link of request.chain) {
          const row = q.selectTaskInstance.get(runId, mappedTaskId(link, key)) as Row | undefined;
          if (row) chainStates.set(mappedTaskId(link, key), row.state);
        }
      }
      const downstream = request.downstream.flatMap((id) => {
        const row = q.selectTaskInstance.get(runId, id) as Row | undefined;
        return row ? [{ taskId: id, state: row.state as TaskState }] : [];
      });
      const expanded = counts?.map_total !== null && counts?.map_total !== undefined;
      const plan = planKeyClear({ runId, taskId, selector: request.selector, expanded, instances, chain: request.chain, chainStates, downstream });
      if (plan.conflict !== undefined) throw new StoreConflictError(plan.conflict);
      const task = new Map(request.tasks.map((t) => [t.taskId, t]));
      const reset = (id: string, of: string) => {
        const t = task.get(of);
        if (!t) throw new StoreConflictError(`run ${runId}: no task ${of} in the request`);
        q.resetTaskInstance.run({ runId, taskId: id, maxTries: t.maxTries, triggerRule: t.triggerRule, pool: t.pool, slots: t.slots, priority: t.priority });
      };
      for (const id of plan.instances) reset(id, parseMappedTaskId(id)!.taskId);
      for (const id of plan.downstream) reset(id, id);
      for (const mapped of plan.reopen) q.mapReopen.run(runId, mapped);
      // The named task's instances wait on nothing but maxActive; chained ones wait for their key's parent.
      const maxActive = counts!.map_max_active as number | null;
      if (maxActive === null) {
        for (const key of plan.keys) q.queueTaskInstance.run(request.at, runId, mappedTaskId(taskId, key));
      } else {
        this.#fillMaxActive(runId, taskId, maxActive, request.at);
      }
      // The cleared keys' remote jobs: nobody waits on them now (core's planKeyClear refused any running).
      q.requestExternalCancels.run("cleared: the task runs again", runId);
      q.reopenRun.run(runId);
      return { keys: plan.keys };
    }).immediate();
  }

  async markKeys(request: KeyMarkRequest): Promise<{ keys: string[]; marked: string[] }> {
    return this.db.transaction(() => {
      const q = this.q;
      const { runId, taskId } = request;
      const run = q.selectRun.get(runId) as Row | undefined;
      if (!run) throw new StoreConflictError(`no run ${runId}`);
      const counts = q.mapCounts.get(runId, taskId) as Row | undefined;
      const expanded = counts?.map_total !== null && counts?.map_total !== undefined;
      const plan = planKeyMark({ runId, taskId, selector: request.selector, state: request.state, expanded, instances: this.#keyCandidates(runId, taskId, request.selector) });
      if (plan.conflict !== undefined) throw new StoreConflictError(plan.conflict);
      const reason = request.state === "success" ? null : `marked failed: ${request.reason}`;
      for (const id of plan.settle) this.#settleOneByHand(run, { runId, taskId: id, reason: request.reason, at: request.at }, request.state, reason);
      return { keys: plan.matched, marked: plan.settle };
    }).immediate();
  }

  /** The instances of a mapped task an operator's selector may name, read as core's keyLookup says. */
  #keyCandidates(runId: string, taskId: string, selector: string): { key: string; state: TaskState }[] {
    const lookup = keyLookup(selector);
    const rows = (lookup.kind === "key" ? this.q.mapInstanceOfKey.all(runId, taskId, lookup.key)
      : lookup.kind === "all" ? this.q.mapExistingKeys.all(runId, taskId)
      : lookup.to === null ? this.q.mapInstancesFrom.all(runId, taskId, lookup.from)
      : this.q.mapInstancesInRange.all(runId, taskId, lookup.from, lookup.to)) as Row[];
    return rows.map((r) => ({ key: r.map_key as string, state: r.state as TaskState }));
  }

  /** maxActive: queues held instances (by position) into the places the active ones leave. */
  #fillMaxActive(runId: string, taskId: string, maxActive: number, at: number): void {
    const active = (this.q.mapActive.get(runId, taskId) as Row).n as number;
    for (let free = maxActive - active; free > 0; free--) {
      if (this.q.mapReleaseHeld.run({ runId, taskId, at }).changes === 0) break;
    }
  }

  async claimReady(request: ClaimRequest): Promise<ClaimedAttempt[]> {
    return this.db.transaction(() => this.#claim(request)).immediate();
  }

  /** A claim, inside the caller's transaction. */
  #claim(request: ClaimRequest): ClaimedAttempt[] {
    const q = this.q;
    const limits = request.limits ?? {};
    // Read as many candidates as wanted; look further (as PostgreSQL does) only when some did
    // not fit their pool or their pipeline's cap: every row read is joined, mapped and sorted.
    const read = (scan: number) => {
      if (request.runId) {
        const rows = q.selectRunCandidates.all({ runId: request.runId, now: request.now, limit: scan }) as Row[];
        return { rows, exhausted: rows.length < scan };
      }
      if (request.backfillId) {
        const rows = q.selectBackfillCandidates.all(request.backfillId, request.now, scan) as Row[];
        return { rows, exhausted: rows.length < scan };
      }
      const due = q.selectWaitingCandidates.all(request.now, scan) as Row[];
      const queued = q.selectQueuedCandidates.all(scan) as Row[];
      return { rows: [...due, ...queued], exhausted: due.length < scan && queued.length < scan };
    };
    let scan = request.limit;
    let { rows, exhausted } = read(scan);
    if (rows.length === 0) return [];

    const running = limits.parallelism === undefined ? 0 : ((q.countRunningAll.get() as Row).n as number);
    const runningByPipeline = new Map<string, number>();
    if (limits.maxActiveTasks) {
      for (const r of q.countRunningByPipeline.all() as Row[]) runningByPipeline.set(r.pipeline_id, r.n);
    }
    let pools: Map<string, { slots: number; used: number }> | null = null;
    let heldRemotely = new Set<string>();
    const plan = () => {
      const candidates = rows.map(claimCandidate);
      if (pools === null && candidates.some((c) => c.pool !== null)) {
        const counted = new Map<string, { slots: number; used: number }>();
        for (const p of q.selectPools.all() as Row[]) counted.set(p.name, { slots: p.slots, used: 0 });
        for (const u of q.poolsInUse.all() as Row[]) {
          const pool = counted.get(u.pool);
          if (pool) pool.used = u.used;
        }
        ({ pools, heldRemotely } = withRemoteHolds(counted, (q.remotePoolHolders.all() as Row[]).map(remoteHolder)));
      }
      for (const c of candidates) if (c.pool !== null && heldRemotely.has(holderKey(c.row.run_id, c.taskId))) c.heldRemotely = true;
      return planClaim(candidates, { ...limits, limit: request.limit, now: request.now, pipelineIds: request.pipelineIds }, { running, runningByPipeline, pools: pools ?? new Map() });
    };
    let chosen = plan();
    const wide = request.limit * 4 + 32;
    if (chosen.chosen.length < request.limit && chosen.passedOver && !exhausted && scan < wide) {
      scan = wide;
      ({ rows, exhausted } = read(scan));
      chosen = plan();
    }
    const startedRuns = new Set<string>();
    return chosen.chosen.map((c) => this.#startAttempt(c.row, request, startedRuns));
  }

  /**
   * The candidate row carries the run's and the task instance's columns (read in the same
   * transaction, under the write lock), so starting an attempt writes and reads nothing else.
   * `startedRuns`: the runs this claim marked running already (it often takes several tasks of one).
   */
  #startAttempt(c: Row, request: ClaimRequest, startedRuns: Set<string>): ClaimedAttempt {
    const q = this.q;
    const tryNumber = nextTryNumber({ state: c.state, tryNumber: c.try_number });
    const leaseExpiresAt = request.now + request.leaseMs;
    const logPath = attemptLogPath(request.logDir, c.run_id, c.task_id, tryNumber);
    const started = q.insertAttempt.run(c.run_id, c.task_id, tryNumber, request.workerId, request.pid, request.now, leaseExpiresAt, logPath);
    const attemptId = Number(started.lastInsertRowid);
    q.startTaskInstance.run(tryNumber, attemptId, request.now, c.run_id, c.task_id);
    if (c.run_state === "queued" && !startedRuns.has(c.run_id)) {
      q.markRunRunning.run(request.now, c.run_id);
      startedRuns.add(c.run_id);
    }
    return toClaimedAttempt({ ...c, attempt_id: attemptId, try_number: tryNumber, log_path: logPath, started_at: c.started_at ?? request.now }, leaseExpiresAt);
  }

  async renewLease(attemptId: number, workerId: string, leaseExpiresAt: number): Promise<boolean> {
    return this.q.renewLease.run(leaseExpiresAt, attemptId, workerId).changes === 1;
  }

  /**
   * Finishes that arrive in one turn of the event loop (task hosts answer one message at a
   * time, but several are often read in one poll) are recorded together, in one transaction,
   * after the turn: one write lock and one commit for all of them. Each sees those before it, as
   * if recorded one by one, and one that throws fails alone: the batch runs with no savepoint
   * first; if a finish throws, that transaction is rolled back whole and the batch runs again
   * in a new one, each finish in a savepoint of its own. (A savepoint journals every page the
   * batch changes; one per finish, always, cost a fifth of a finish.)
   */
  async finishAttempt(f: AttemptFinish): Promise<FinishOutcome> {
    assertSummaryFits(f.summary);
    return new Promise((resolve, reject) => {
      this.#pendingFinishes.push({ finish: f, resolve, reject });
      if (this.#pendingFinishes.length === 1) setImmediate(() => this.#recordPendingFinishes());
    });
  }

  #recordPendingFinishes(): void {
    const batch = this.#pendingFinishes.splice(0);
    if (batch.length === 0) return;
    let results: ({ outcome: FinishOutcome } | { error: unknown })[];
    try {
      results = this.#recordTogether(batch.map((b) => b.finish));
    } catch (error) {
      for (const q of batch) q.reject(error);
      return;
    }
    batch.forEach((q, i) => {
      const result = results[i]!;
      if ("error" in result) q.reject(result.error);
      else q.resolve(result.outcome);
    });
  }

  #recordTogether(finishes: readonly AttemptFinish[]): ({ outcome: FinishOutcome } | { error: unknown })[] {
    let aFinishThrew = false;
    try {
      return this.db.transaction(() => finishes.map((f) => {
        try {
          return { outcome: this.#finishOne(f) };
        } catch (error) {
          aFinishThrew = true;
          throw error;
        }
      })).immediate();
    } catch (error) {
      if (!aFinishThrew) throw error;
    }
    return this.db.transaction(() => finishes.map((f) => {
      try {
        return { outcome: this.db.transaction(() => this.#finishOne(f))() };
      } catch (error) {
        return { error };
      }
    })).immediate();
  }

  /** One finish, inside the batch's transaction. */
  #finishOne(f: AttemptFinish): FinishOutcome {
    const q = this.q;
    const ended = q.finishAttempt.run(
      f.outcome, f.now, f.exitCode, f.errorClass, f.errorMessage, f.summary, f.startedAt ?? null, f.attemptId, f.workerId,
    );
    if (ended.changes === 0) {
      const stale = q.selectAttemptForFinish.get(f.attemptId) as Row | undefined;
      return { accepted: false, taskState: (stale?.ti_state as TaskState) ?? null, runState: null };
    }
    const a = q.selectFinishedAttempt.get(f.attemptId) as Row;
    if (f.outcome === "success") {
      for (const dataset of f.datasets ?? []) {
        q.insertDatasetEvent.run(dataset, a.business_date, a.run_id, a.pipeline_id, a.task_id, a.trigger_kind, f.now);
      }
      for (const p of f.publishes ?? []) {
        const row = {
          dataset: p.dataset, businessDate: a.business_date, at: f.now, pipelineId: a.pipeline_id, runId: a.run_id,
          taskId: a.task_id, summary: f.summary, emptyReason: p.emptyReason, trigger: a.trigger_kind,
        };
        q.upsertFreshness.run(row);
        q.insertFreshnessHistory.run(row);
      }
    }
    if (f.outcome === "rescheduled") {
      q.setTaskState.run("up_for_reschedule", f.retryAt ?? f.now, null, null, a.run_id, a.task_id);
      return { accepted: true, taskState: "up_for_reschedule", runState: null };
    }
    if (f.outcome === "success" && f.map) return this.#expand(a, f.map.items, f.map.maxActive, f.map.chained ?? [], f.now);
    return this.#endTry(a, f.outcome, f.outcome === "failed" && f.retryable ? f.retryAt : null, f.skipReason, f.now);
  }

  /** Ends a try: a retry if one is allowed, else a final state that flows downstream. */
  #endTry(a: Row, outcome: "success" | "failed" | "skipped", retryAt: number | null, skipReason: string | null, now: number): FinishOutcome {
    const end = endTry({ tryNumber: a.try_number, maxTries: a.max_tries }, outcome, retryAt, skipReason, now);
    this.q.setTaskState.run(end.state, end.nextTryAt, end.reason, end.endedAt, a.run_id, a.task_id);
    if (end.state !== "up_for_retry") {
      const progress = new RunProgress();
      progress.settled(a.task_id, end.state, now);
      this.#mappedInstanceEnded(a.run_id, a.task_id, now, progress);
      this.#decideDownstream(a.run_id, a.graph_version, progress);
    }
    return { accepted: true, taskState: end.state, runState: this.#finishRunIfDone(a.run_id, now) };
  }

  /**
   * A mapped task's first step ended with its list: its instances are written (a rerun's list
   * diffed by key with the instances the run has) in chunked statements, its counts set, and it
   * waits for them, or settles at once when nothing is left to run (an empty list).
   */
  #expand(a: Row, items: readonly MappedItem[], maxActive: number | null, chained: readonly { taskId: string; parent: string; maxActive?: number | null }[], now: number): FinishOutcome {
    const q = this.q;
    const scope = { runId: a.run_id as string, taskId: a.task_id as string };
    const existing = (q.mapExistingKeys.all(scope.runId, scope.taskId) as Row[]).map((r) => ({ key: r.map_key as string, removed: r.state === "removed" }));
    this.#writeExpansion(scope, existing, items, maxActive, a.max_tries - a.try_number + 1, null, now);
    for (const link of chained) {
      const row = q.mapCounts.get(scope.runId, link.taskId) as Row | undefined;
      if (!row) continue;
      const linked = { runId: scope.runId, taskId: link.taskId };
      const had = (q.mapExistingKeys.all(scope.runId, link.taskId) as Row[]).map((r) => ({ key: r.map_key as string, removed: r.state === "removed" }));
      this.#writeExpansion(linked, had, items, link.maxActive ?? null, row.max_tries - row.try_number, link.parent, now);
    }
    const progress = new RunProgress();
    const settled = this.#mappedTaskCheck(scope.runId, scope.taskId, now, progress);
    for (const link of chained) this.#mappedTaskCheck(scope.runId, link.taskId, now, progress);
    this.#decideDownstream(a.run_id, a.graph_version, progress);
    return { accepted: true, taskState: settled ?? "scheduled", runState: this.#finishRunIfDone(a.run_id, now) };
  }

  /** One mapped task's instances for a list: chunked inserts (added keys), resets (kept keys), removals; then its counts. */
  #writeExpansion(scope: { runId: string; taskId: string }, existing: readonly { key: string; removed: boolean }[], items: readonly MappedItem[],
    maxActive: number | null, tries: number, parent: string | null, now: number): void {
    const q = this.q;
    const writes = expansionWrites(existing, items, maxActive, parent !== null);
    for (const rows of writes.insert) q.mapInsert.run({ ...scope, at: now, tries, parent, rows: JSON.stringify(rows) });
    for (const rows of writes.reset) q.mapResetKept.run({ ...scope, at: now, tries, rows: JSON.stringify(rows) });
    for (const keys of writes.removed) q.mapRemove.run({ ...scope, at: now, reason: REMOVED_REASON, keys: JSON.stringify(keys) });
    q.mapRecount.run({ ...scope, maxActive });
  }

  /** A mapped instance reached a final state: a held instance takes its place, and its mapped task may end. */
  #mappedInstanceEnded(runId: string, taskId: string, at: number, progress: RunProgress, heldPlace = true): void {
    const mapped = parseMappedTaskId(taskId);
    if (!mapped) return;
    const counts = this.q.mapCounts.get(runId, mapped.taskId) as Row | undefined;
    if (heldPlace && counts?.map_max_active !== null && counts?.map_max_active !== undefined) {
      // A chained instance's place goes to the first one held eligible; another's to the first held by position.
      const chained = (this.q.mapParentOf.get(runId, taskId) as Row | undefined)?.map_parent != null;
      if (chained) this.q.mapReleaseReady.run({ runId, taskId: mapped.taskId, at });
      else this.q.mapReleaseHeld.run({ runId, taskId: mapped.taskId, at });
    }
    this.#mappedTaskCheck(runId, mapped.taskId, at, progress);
  }

  /** The chained instances these decisions made eligible that their mapped task's maxActive holds back (core's admitUnderMaxActive). */
  #heldUnderMaxActive(runId: string, decided: readonly Settlement[]): Set<string> {
    const eligible = decided.filter((d) => d.state === "queued" && parseMappedTaskId(d.taskId)).map((d) => d.taskId);
    if (eligible.length === 0) return new Set();
    const room = new Map<string, number>();
    for (const mapped of new Set(eligible.map((id) => parseMappedTaskId(id)!.taskId))) {
      const maxActive = (this.q.mapCounts.get(runId, mapped) as Row | undefined)?.map_max_active as number | null | undefined;
      if (maxActive !== null && maxActive !== undefined) room.set(mapped, maxActive - ((this.q.mapActive.get(runId, mapped) as Row).n as number));
    }
    return new Set(admitUnderMaxActive(eligible, room).hold);
  }

  /** Settles a mapped task whose instances have all ended (core's mappedTaskEnd); its state, or null while it waits. */
  #mappedTaskCheck(runId: string, taskId: string, at: number, progress: RunProgress): TaskState | null {
    const counts = this.q.mapCounts.get(runId, taskId) as Row | undefined;
    if (!counts || counts.state !== "scheduled" || counts.map_total === null) return null;
    const end = mappedTaskEnd({ live: counts.map_live, failing: counts.map_failing, total: counts.map_total });
    if (!end) return null;
    this.q.mapSettle.run({ runId, taskId, state: end.state, reason: end.reason, at });
    progress.settled(taskId, end.state, at);
    return end.state;
  }

  async pageMappedInstances(query: MappedInstanceQuery): Promise<MappedInstanceRecord[]> {
    const rows = this.q.pageMappedInstances.all({
      runId: query.runId, taskId: query.taskId, after: query.afterKey ?? "", prefix: query.keyPrefix ?? null,
      states: query.states ? JSON.stringify(query.states) : null, limit: query.limit,
    }) as Row[];
    return rows.map(mappers.toMappedInstance);
  }

  /** Reads the waiting children core's RunProgress asks for until it has decided everything, then writes its decisions. */
  #decideDownstream(runId: string, graphVersion: string, progress: RunProgress): void {
    const q = this.q;
    let written = 0;
    for (;;) {
      for (let parent = progress.next(); parent !== null; parent = progress.next()) {
        const children = waitingTasks(q.waitingChildrenWithParents.all({ runId, graphVersion, parent }) as Row[]);
        // A mapped instance's chained instances (the same key, mapped by key over its task) wait on it alone.
        if (parseMappedTaskId(parent)) children.push(...waitingTasks(q.mapChainedChildren.all(runId, parent) as Row[]));
        progress.childrenRead(parent, children);
      }
      const fresh = progress.decided.slice(written);
      written = progress.decided.length;
      const held = this.#heldUnderMaxActive(runId, fresh);
      for (const d of fresh) {
        if (d.state === "queued") {
          if (held.has(d.taskId)) q.mapHold.run(d.at, runId, d.taskId);
          else q.queueTaskInstance.run(d.at, runId, d.taskId);
        } else q.settleTaskInstance.run(d.state, d.reason, d.at, runId, d.taskId);
      }
      // A chained instance skipped or upstream_failed may have been its mapped task's last: that
      // task ends, and what follows it is decided in turn.
      let settledMapped = false;
      for (const d of fresh) {
        const mapped = d.state === "queued" ? null : parseMappedTaskId(d.taskId);
        if (mapped && this.#mappedTaskCheck(runId, mapped.taskId, d.at, progress) !== null) settledMapped = true;
      }
      if (!settledMapped) return;
    }
  }

  #runProgress(runId: string): { live: boolean; failed: boolean } {
    const row = this.q.runProgress.get({ runId }) as Row;
    return { live: row.live === 1, failed: row.failed === 1 };
  }

  #finishRunIfDone(runId: string, now: number): RunState | null {
    const state = runEnd(this.#runProgress(runId));
    if (state) this.q.finishRun.run(state, now, runId);
    return state;
  }

  async pipelineState(pipelineId: string, at: number): Promise<PipelineState> {
    this.q.insertPipelineState.run(pipelineId, at);
    return toPipelineState(this.q.selectPipelineState.get(pipelineId) as Row);
  }

  async setPaused(r: PauseRequest): Promise<PipelineState> {
    return this.db.transaction(() => {
      this.q.insertPipelineState.run(r.pipelineId, r.at);
      this.q.setPaused.run(r.paused ? 1 : 0, r.note, r.actor, r.at, r.pipelineId);
      return toPipelineState(this.q.selectPipelineState.get(r.pipelineId) as Row);
    }).immediate();
  }

  async skipIntervals(r: SkipIntervalsRequest): Promise<void> {
    this.db.transaction(() => {
      this.q.insertPipelineState.run(r.pipelineId, r.at);
      for (const i of r.intervals) this.q.insertSkippedInterval.run(r.pipelineId, i.start, i.end, i.businessDate, r.reason, r.at);
      this.q.advanceCursor.run(r.cursor, r.cursor, r.pipelineId);
    }).immediate();
  }

  async setPool(pool: { name: string; slots: number; description?: string | null; at: number }): Promise<void> {
    this.q.upsertPool.run(pool.name, pool.slots, pool.description ?? null, pool.at);
  }

  async ensurePools(pools: readonly { name: string; slots: number }[], at: number): Promise<void> {
    this.db.transaction(() => {
      for (const pool of pools) this.q.insertPoolIfAbsent.run(pool.name, pool.slots, at);
    }).immediate();
  }

  async deletePool(name: string): Promise<boolean> {
    return this.q.deletePool.run(name).changes === 1;
  }

  async heartbeatWorker(w: { workerId: string; host: string; pid: number; concurrency: number; at: number }): Promise<void> {
    this.q.upsertWorker.run(w.workerId, w.host, w.pid, w.concurrency, w.at, w.at);
  }

  async removeWorker(workerId: string): Promise<void> {
    this.q.deleteWorker.run(workerId);
  }

  async loseAttempt(r: { attemptId: number; now: number; retryAt: number | null }): Promise<FinishOutcome> {
    return this.db.transaction((): FinishOutcome => {
      const a = this.q.selectAttemptForFinish.get(r.attemptId) as Row | undefined;
      if (!isCurrentAttempt(a, r.attemptId) || a!.lease_expires_at === null || a!.lease_expires_at >= r.now) {
        return { accepted: false, taskState: (a?.ti_state as TaskState) ?? null, runState: null };
      }
      this.q.loseAttempt.run(r.now, `worker ${a!.worker_id} stopped renewing its lease: presumed dead`, r.attemptId);
      const outcome = this.#endTry(a!, "failed", r.retryAt, null, r.now);
      this.q.requestExternalCancels.run("the task instance failed for good: its attempt was lost with no try left", a!.run_id);
      return outcome;
    }).immediate();
  }

  async tryLead(r: { role: string; holder: string; now: number; ttlMs: number }): Promise<Leadership> {
    return this.db.transaction((): Leadership => {
      const q = this.q;
      const row = q.selectLease.get(r.role) as Row | undefined;
      const expiresAt = r.now + r.ttlMs;
      if (!row) q.insertLease.run(r.role, r.holder, expiresAt, r.now);
      else if (row.holder === r.holder) q.renewOwnLease.run(expiresAt, r.now, r.role, r.holder);
      else if (row.expires_at <= r.now) q.takeOverLease.run(r.holder, expiresAt, r.now, r.role);
      return toLeadership(q.selectLease.get(r.role) as Row, r.holder);
    }).immediate();
  }

  async resignLead(role: string, holder: string): Promise<void> {
    this.q.resignLease.run(role, holder);
  }

  async collectDatasetEvents(pipelineId: string, datasets: readonly string[]): Promise<Map<string, Set<string>>> {
    return this.db.transaction(() => {
      const q = this.q;
      q.insertPipelineState.run(pipelineId, 0);
      const cursor = (q.selectPipelineState.get(pipelineId) as Row).event_cursor as number;
      const upTo = (q.maxDatasetEventId.get() as Row).id as number;
      for (const dataset of datasets) {
        for (const e of q.selectDatasetEventsAfter.all(dataset, cursor, upTo) as Row[]) {
          q.upsertDatasetWait.run(pipelineId, e.business_date, dataset, e.id);
        }
      }
      q.setEventCursor.run(upTo, pipelineId);
      return datasetWaits(q.selectDatasetWaits.all(pipelineId) as Row[]);
    }).immediate();
  }

  async consumeDatasetWaits(pipelineId: string, businessDate: string): Promise<void> {
    this.q.deleteDatasetWaits.run(pipelineId, businessDate);
  }

  async recordExternalDatasetEvent(r: NewExternalDatasetEvent): Promise<ExternalDatasetEventRecorded> {
    assertSummaryFits(r.summary);
    return this.db.transaction(() => {
      const q = this.q;
      const row = q.insertExternalDatasetEvent.get({
        dataset: r.dataset, businessDate: r.businessDate, at: r.at, source: r.source, actor: r.actor, idempotencyKey: r.idempotencyKey, summary: r.summary,
      }) as Row | undefined;
      if (!row) {
        const first = q.selectDatasetEventByKey.get(r.dataset, r.idempotencyKey) as Row;
        return { event: mappers.toDatasetEvent(first) as ExternalDatasetEvent, created: false, audit: null };
      }
      const e = r.audit;
      const audit = toAuditEntry(q.insertAudit.get({
        at: e.at, actor: e.actor, action: e.action, pipelineId: e.pipelineId, runId: e.runId ?? null, taskId: e.taskId ?? null,
        reason: e.reason ?? null, graphVersion: e.graphVersion ?? null, details: JSON.stringify(e.details ?? {}),
      }) as Row);
      return { event: mappers.toDatasetEvent(row) as ExternalDatasetEvent, created: true, audit };
    }).immediate();
  }

  async recordExternalJob(job: NewExternalJob): Promise<ExternalJobRecord | null> {
    return this.db.transaction(() => {
      const inserted = this.q.insertExternalJob.get({ ...job, holdsPool: job.holdsPool ? 1 : 0 }) as Row | undefined;
      return inserted ? toExternalJob(this.q.selectExternalJob.get(inserted.job_id) as Row) : null;
    }).immediate();
  }

  async externalJobOf(runId: string, taskId: string): Promise<{ job: ExternalJobRecord | null; submissions: number }> {
    return this.db.transaction(() => {
      const row = this.q.selectLiveExternalJob.get(runId, taskId) as Row | undefined;
      const { n } = this.q.countExternalJobs.get(runId, taskId) as Row;
      return { job: row ? toExternalJob(row) : null, submissions: Number(n) };
    })();
  }

  async endExternalJob(r: EndExternalJob): Promise<boolean> {
    const values = { jobId: r.jobId, state: r.state, at: r.at, note: r.note };
    const result = r.by
      ? this.q.endExternalJobByAttempt.run({ ...values, attemptId: r.by.attemptId, workerId: r.by.workerId })
      : r.state === "cancelled" ? this.q.endRequestedExternalJob.run(values) : { changes: 0 };
    return result.changes === 1;
  }

  async externalJobsToCancel(pipelineIds: readonly string[], limit: number): Promise<ExternalJobRecord[]> {
    return (this.q.externalJobsToCancel.all(JSON.stringify(pipelineIds), limit) as Row[]).map(toExternalJob);
  }

  async listExternalJobs(runId: string, taskId?: string): Promise<ExternalJobRecord[]> {
    return (this.q.listExternalJobs.all({ runId, taskId: taskId ?? null }) as Row[]).map(toExternalJob);
  }

  async skipTask(r: TaskActionRequest): Promise<TaskInstanceRecord> {
    return this.#settleByHand(r, "skipped", r.reason);
  }

  async markTask(r: TaskActionRequest & { state: "success" | "failed" }): Promise<TaskInstanceRecord> {
    return this.#settleByHand(r, r.state, r.state === "success" ? null : `marked failed: ${r.reason}`);
  }

  #settleByHand(r: TaskActionRequest, state: "success" | "failed" | "skipped", reason: string | null): TaskInstanceRecord {
    return this.db.transaction(() => {
      const q = this.q;
      const run = q.selectRun.get(r.runId) as Row | undefined;
      const ti = run ? (q.selectTaskInstance.get(r.runId, r.taskId) as Row | undefined) : undefined;
      const refusal = settleByHandRefusal(r.runId, r.taskId, { run: Boolean(run), taskState: ti?.state ?? null });
      if (refusal !== null || !run) throw new StoreConflictError(refusal ?? `no run ${r.runId}`);
      this.#settleOneByHand(run, r, state, reason);
      return toTaskInstance(q.selectTaskInstance.get(r.runId, r.taskId) as Row);
    }).immediate();
  }

  /** One task instance settled by hand, inside the caller's transaction (its refusals already checked). */
  #settleOneByHand(run: Row, r: TaskActionRequest, state: "success" | "failed" | "skipped", reason: string | null): void {
    const q = this.q;
    const before = (q.selectTaskInstance.get(r.runId, r.taskId) as Row).state as TaskState;
    q.settleByHand.run(state, reason, r.at, r.runId, r.taskId);
    q.reopenRun.run(r.runId);
    // Downstream instances settled because of the old state (upstream_failed, or skipped for an
    // upstream skip) wait again, and are settled afresh from the new one.
    const stack = [r.taskId];
    const mapped = parseMappedTaskId(r.taskId);
    const counts = mapped ? (q.mapCounts.get(r.runId, mapped.taskId) as Row | undefined) : undefined;
    if (mapped && counts && markReopensMappedTask({ state: counts.state, mapTotal: counts.map_total })) {
      q.mapReopen.run(r.runId, mapped.taskId);
      stack.push(mapped.taskId);
    }
    while (stack.length > 0) {
      for (const c of q.childInstances.all(r.runId, run.graph_version, stack.pop()!) as Row[]) {
        const reopened = reopenedByHand({ state: c.state, reason: c.reason, tryNumber: c.try_number, maxTries: c.max_tries });
        if (!reopened) continue;
        q.resetTaskInstance.run({
          runId: r.runId, taskId: c.task_id, maxTries: reopened.maxTries, triggerRule: c.trigger_rule, pool: c.pool, slots: c.slots, priority: c.priority,
        });
        stack.push(c.task_id);
      }
    }
    const progress = new RunProgress();
    progress.settled(r.taskId, state, r.at);
    // Only an instance that held a maxActive place frees one (a held one marked never did).
    this.#mappedInstanceEnded(r.runId, r.taskId, r.at, progress, holdsMaxActivePlace(before));
    this.#decideDownstream(r.runId, run.graph_version, progress);
    q.requestExternalCancels.run(`settled by hand as ${state}: ${r.reason}`, r.runId);
    this.#finishRunIfDone(r.runId, r.at);
  }

  async createBackfill(b: NewBackfill): Promise<{ backfill: BackfillRecord; created: boolean }> {
    return this.db.transaction(() => {
      const q = this.q;
      const taskIds = b.taskIds ? JSON.stringify(b.taskIds) : null;
      const same = q.selectSameLiveBackfill.get(b.pipelineId, b.fromDate, b.toDate, b.reprocess, taskIds ?? "") as Row | undefined;
      if (same) return { backfill: toBackfill(same), created: false };
      q.insertBackfill.run({ ...b, backwards: b.backwards ? 1 : 0, taskIds, estimate: JSON.stringify(b.estimate), codeChoice: b.codeChoice ?? "latest" });
      b.items.forEach((i, seq) =>
        q.insertBackfillItem.run(b.backfillId, seq, i.businessDate, i.intervalStart, i.intervalEnd, i.action, i.why, i.runId),
      );
      return { backfill: toBackfill(q.selectBackfill.get(b.backfillId) as Row), created: true };
    }).immediate();
  }

  async markBackfillItemStarted(backfillId: string, seq: number): Promise<void> {
    this.q.markBackfillItemStarted.run(backfillId, seq);
  }

  async setBackfillState(backfillId: string, state: BackfillState, at: number): Promise<BackfillRecord> {
    this.q.setBackfillState.run(state, at, state, at, backfillId);
    const row = this.q.selectBackfill.get(backfillId) as Row | undefined;
    if (!row) throw new StoreConflictError(`no backfill ${backfillId}`);
    return toBackfill(row);
  }

  async cancelBackfill(backfillId: string, reason: string, at: number): Promise<BackfillRecord> {
    return this.db.transaction(() => {
      const q = this.q;
      if (!q.selectBackfill.get(backfillId)) throw new StoreConflictError(`no backfill ${backfillId}`);
      q.setBackfillState.run("cancelled", at, "cancelled", at, backfillId);
      for (const { run_id } of q.selectLiveRunsOfBackfill.all(backfillId) as Row[]) {
        q.skipWaitingOfRun.run(reason, at, run_id);
        q.requestExternalCancels.run(`backfill cancelled: ${reason}`, run_id);
        // A cancelled run is not a success, whatever its remaining tasks say.
        if (!this.#runProgress(run_id).live) q.finishRun.run("failed", at, run_id);
      }
      return toBackfill(q.selectBackfill.get(backfillId) as Row);
    }).immediate();
  }

  async openIncident(i: NewIncident): Promise<boolean> {
    return this.db.transaction(() => {
      const closed = i.closed === undefined ? { resolvedAt: null, resolvedBy: null, resolution: null } : { resolvedAt: i.at, resolvedBy: SYSTEM_ACTOR, resolution: i.closed };
      const { closed: _, ...row } = i;
      const inserted = this.q.insertIncident.run({ ...row, ...closed, notify: JSON.stringify(i.notify) }).changes === 1;
      if (inserted) this.#queueAlerts(i.key, "open", i.at);
      if (inserted) this.q.insertAudit.get(auditRow(incidentAudit(i, { action: "incident-open", reason: i.message, at: i.at })));
      if (inserted && i.closed !== undefined) this.q.insertAudit.get(auditRow(incidentAudit(i, { action: "incident-resolve", reason: i.closed, at: i.at })));
      return inserted;
    }).immediate();
  }

  async resolveIncident(key: string, at: number, resolution: string): Promise<boolean> {
    return this.db.transaction(() => {
      const resolved = this.q.resolveIncident.run(at, SYSTEM_ACTOR, resolution, key).changes === 1;
      if (resolved) {
        const incident = this.#queueAlerts(key, "resolve", at);
        this.q.insertAudit.get(auditRow(incidentAudit(incident, { action: "incident-resolve", reason: resolution, at })));
      }
      return resolved;
    }).immediate();
  }

  async actOnIncident(request: IncidentActionRequest): Promise<{ incident: Incident; audit: AuditEntry }> {
    return this.db.transaction(() => {
      const row = this.q.selectIncident.get(request.key) as Row | undefined;
      if (!row) throw new StoreConflictError(`no incident ${request.key}`);
      const decision = decideIncidentAction(request.key, toIncident(row), request, request.at);
      if (decision.refusal !== undefined) throw new StoreConflictError(decision.refusal);
      let incident: Incident;
      if (decision.resolved) {
        this.q.resolveIncident.run(decision.resolved.at, decision.resolved.by, decision.resolved.resolution, request.key);
        incident = this.#queueAlerts(request.key, "resolve", request.at);
      } else {
        const ack = decision.acknowledgement;
        this.q.acknowledgeIncident.run({ key: request.key, at: ack.at, by: ack.by, reason: ack.reason, until: ack.until });
        incident = toIncident(this.q.selectIncident.get(request.key) as Row);
      }
      const audit = toAuditEntry(this.q.insertAudit.get(auditRow(incidentAudit(incident, {
        action: auditActionOf(request), actor: request.actor, reason: request.reason.trim(), at: request.at,
        until: request.kind === "acknowledge" ? request.until : null,
      }))) as Row);
      return { incident, audit };
    }).immediate();
  }

  async reopenIncident(key: string, at: number): Promise<boolean> {
    return this.db.transaction(() => {
      const row = this.q.selectIncident.get(key) as Row | undefined;
      if (!row || !reopenDue(toIncident(row), at)) return false;
      this.q.markIncidentReopened.run(row.acknowledged_at as number, key);
      this.#queueAlerts(key, "reopen", at, row.ack_until as number);
      return true;
    }).immediate();
  }

  /**
   * Queues one alert per notifier the incident names (once per event and occasion: the outbox is
   * unique on them; a reopen's occasion is the end of the snooze it tells); returns the incident.
   */
  #queueAlerts(key: string, event: AlertEvent, at: number, occasion = 0): Incident {
    const incident = toIncident(this.q.selectIncident.get(key) as Row);
    const payload = JSON.stringify({ event, ...incident });
    for (const notifier of incident.notify) this.q.insertAlert.run(key, event, notifier, payload, at, occasion);
    return incident;
  }

  async recordAlertDelivery(id: number, result: { at: number; error?: string; nextAttemptAt?: number }): Promise<void> {
    if (result.error === undefined) this.q.alertDelivered.run(result.at, id);
    else this.q.alertFailed.run(result.error, result.nextAttemptAt ?? result.at, id);
  }

  async saveWatermark(pipelineId: string, taskId: string, value: string | number, at: number): Promise<void> {
    this.q.upsertWatermark.run(pipelineId, taskId, String(value), typeof value === "number" ? "number" : "text", at);
  }

  async appendAudit(e: NewAuditEntry): Promise<AuditEntry> {
    return toAuditEntry(this.q.insertAudit.get(auditRow(e)) as Row);
  }

  async createToken(token: NewApiToken): Promise<ApiTokenRecord> {
    const row = this.q.insertToken.get(token) as Row | undefined;
    if (!row) throw new StoreConflictError(`a token named "${token.name}" exists; revoke it first`);
    return toApiToken(row);
  }

  async revokeToken(request: { name: string; by: string; at: number }): Promise<ApiTokenRecord | null> {
    const row = this.q.revokeToken.get(request.at, request.by, request.name) as Row | undefined;
    return row ? toApiToken(row) : null;
  }

  async noteRestateRefusal(r: { runId: string; headStart: number; note: string }): Promise<boolean> {
    return this.q.noteRestateRefusal.run(r.note, r.headStart, r.runId, r.headStart).changes === 1;
  }

  async setWatermarkByHand(request: { pipelineId: string; taskId: string; value: string | number; at: number }): Promise<{ set: true; previous: string | number | null } | { set: false; liveRunId: string }> {
    const { pipelineId, taskId, value, at } = request;
    return this.db
      .transaction(() => {
        const owner = this.q.selectWatermarkOwner.get(taskId, pipelineId) as Row | undefined;
        if (owner) return { set: false as const, liveRunId: owner.run_id as string };
        const row = this.q.selectWatermark.get(pipelineId, taskId) as Row | undefined;
        this.q.upsertWatermark.run(pipelineId, taskId, String(value), typeof value === "number" ? "number" : "text", at);
        return { set: true as const, previous: row ? watermarkValue(row) : null };
      })
      .immediate();
  }

  async recordedFrozenPeriods(scope: string): Promise<RecordedFrozenPeriods | null> {
    const row = this.q.selectRecordedFrozen.get(scope) as Row | undefined;
    return row ? { scope: row.scope, periods: row.periods, graphVersion: row.graph_version, recordedAt: row.recorded_at } : null;
  }

  async recordFrozenPeriods(r: RecordFrozenPeriods): Promise<AuditEntry | null> {
    return this.db.transaction(() => {
      const switched = this.q.switchRecordedFrozen.run({ scope: r.scope, periods: r.periods, graphVersion: r.graphVersion, at: r.at, expected: r.expected });
      if (switched.changes === 0) return null;
      const e = r.audit;
      return toAuditEntry(this.q.insertAudit.get({
        at: e.at, actor: e.actor, action: e.action, pipelineId: e.pipelineId, runId: e.runId ?? null, taskId: e.taskId ?? null,
        reason: e.reason ?? null, graphVersion: e.graphVersion ?? null, details: JSON.stringify(e.details ?? {}),
      }) as Row);
    }).immediate();
  }
  async renewLeases(workerId: string, attemptIds: readonly number[], leaseExpiresAt: number): Promise<number[]> {
    if (attemptIds.length === 0) return [];
    const renewed = this.q.renewLeases.all({ until: leaseExpiresAt, attemptIds: JSON.stringify(attemptIds), workerId }) as Row[];
    return renewed.map((r) => Number(r.attempt_id));
  }

  /**
   * The finishes, then the claim, in one IMMEDIATE transaction: one write lock and one WAL
   * commit. A finish that throws fails the whole call (nothing is written); the caller then
   * records them one by one (`finishAttempt`), where one fails alone.
   */
  async finishAndClaim(request: FinishAndClaim): Promise<FinishedAndClaimed> {
    for (const f of request.finishes) assertSummaryFits(f.summary);
    return this.db.transaction(() => ({
      outcomes: request.finishes.map((f) => this.#finishOne(f)),
      claimed: request.claim ? this.#claim(request.claim) : [],
    })).immediate();
  }
}

const { toAuditEntry, toPipelineState, toLeadership, toIncident, toBackfill, toRun, toTaskInstance, toApiToken, toClaimedAttempt } = mappers;

/** An audit entry as the insert statement binds it. */
function auditRow(e: NewAuditEntry): Record<string, unknown> {
  return {
    at: e.at, actor: e.actor, action: e.action, pipelineId: e.pipelineId, runId: e.runId ?? null, taskId: e.taskId ?? null,
    reason: e.reason ?? null, graphVersion: e.graphVersion ?? null, details: JSON.stringify(e.details ?? {}),
  };
}
