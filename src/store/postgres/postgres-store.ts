import { collectedCodeMessage } from "../../core/policy/bundle-retention.ts";
import type { CodeVersionRecord } from "../port.ts";
import type { RecordFrozenPeriods, RecordedFrozenPeriods } from "../port.ts";
import { toExternalJob, watermarkValue } from "../row-mappers.ts";
import type { EndExternalJob, ExternalJobRecord, NewExternalJob } from "../port.ts";
import type { ExternalDatasetEvent, ExternalDatasetEventRecorded, NewExternalDatasetEvent } from "../port.ts";
import pg from "pg";
import type { RunState, TaskState } from "../../core/model/states.ts";
import { attemptLogPath } from "../../core/model/log-path.ts";
import { planClaim } from "../../core/policy/claim-plan.ts";
import { planRerun } from "../../core/policy/rerun-plan.ts";
import { matchedKeys, planKeyClear } from "../../core/policy/key-clear.ts";
import { planKeyMark } from "../../core/policy/key-mark.ts";
import { keyLookup } from "../../core/policy/key-selector.ts";
import { admitUnderMaxActive, holdsMaxActivePlace, mappedTaskEnd, mappedTaskId, markReopensMappedTask, parseMappedTaskId, type MappedItem } from "../../core/policy/fan-out.ts";
import { expansionWrites, REMOVED_REASON } from "../mapping-rows.ts";
import { othersMayFindWork } from "../../core/policy/wake-others.ts";
import { endTry, endTryKnown, nextTryNumber, reopenedByHand, runEnd, RunProgress, settleByHandRefusal, type Settlement, type TryEnd } from "../../core/policy/run-progress.ts";
import { assertSummaryFits, claimCandidate, datasetWaits, isCurrentAttempt, waitingTasks, waitingTasksByParent } from "../decision-rows.ts";
import {
  StoreConflictError, type AttemptFinish, type AuditEntry, type ClaimRequest,
  type ClaimedAttempt, type FinishAndClaim, type FinishedAndClaimed, type FinishOutcome, type Leadership, type NewAuditEntry,
  type NewPipelineVersion, type NewRun, type NewTaskInstance, type PauseRequest, type PipelineState, type RerunRequest, type KeyClearRequest, type KeyMarkRequest, type RunRecord, type SkipIntervalsRequest, type Store,
  type TaskInstanceRecord, type TaskActionRequest, type NewBackfill, type BackfillRecord, type BackfillState, type NewIncident, type Incident, type IncidentActionRequest, type AlertEvent,
  type NewApiToken, type ApiTokenRecord
} from "../port.ts";
import { clientConfig, quoteIdent, resolveTarget, type ConnectionTarget } from "./connection.ts";
import { GroupCommit } from "./group-commit.ts";
import { ClaimLocks } from "./claim-locks.ts";
import { mappers, PostgresReads } from "./reads.ts";
import { AfterCommit, observed, Transactions, type Tx } from "./transaction.ts";
import { WorkListener } from "./listener.ts";
import { assertRestatable } from "../restatable.ts";
import { auditActionOf, decideIncidentAction, reopenDue, SYSTEM_ACTOR } from "../../core/policy/incident-lifecycle.ts";
import { incidentAudit } from "../incident-audit.ts";
import { MIGRATIONS } from "./migrations.ts";
import { KEYS, SESSION_SQL } from "./sql.ts";

type Row = Record<string, any>;

export interface PostgresStoreOptions {
  /** postgres://user:password@host:port/database, optionally with ?schema=name. */
  connectionString: string;
  /** The schema of idem's tables (created by migrate). Overrides the URL's. */
  schema?: string;
  /** Connections this process keeps open at most. Default 10. */
  poolSize?: number;
  /** Shown in pg_stat_activity. Default "idem:<schema>". */
  applicationName?: string;
  /**
   * While the server cannot be reached, calls keep trying (when that is safe: nothing was
   * committed) for this long before failing. Default 30 s; 0 fails at once.
   */
  reconnectWithinMs?: number;
  log?: (line: string) => void;
}

/**
 * The many-machine store: PostgreSQL through a connection pool. Every port method is one
 * transaction (or one statement); hot paths are prepared statements in as few round trips as
 * the data dependencies allow. Workers claim with FOR UPDATE SKIP LOCKED and hear of new work
 * through LISTEN/NOTIFY, sent inside the transactions that make the work eligible.
 *
 * A lost connection costs nothing but time: the pool opens fresh ones, and a call that failed
 * for want of a server is tried again (a transaction only if its COMMIT never went out, so it
 * surely did not happen) until `reconnectWithinMs`; after that, or when COMMIT's fate is
 * unknown, it fails as an ordinary error, which the engine's loops retry in their own way.
 */
export class PostgresStore extends PostgresReads implements Store {
  readonly pool: pg.Pool;
  readonly schema: string;
  readonly #target: ConnectionTarget;
  readonly #applicationName: string;
  readonly #channel: string;
  readonly #listeners = new Set<WorkListener>();
  readonly #log: ((line: string) => void) | undefined;
  readonly #reconnectWithinMs: number;
  readonly #groupCommit = new GroupCommit((finishes) => this.#announcing(this.db.tx((tx) => this.#recordFinishes(tx, finishes))));
  /**
   * Work announcements seen by this process: notifications on its channel, and its own writes
   * that may have made work claimable (a finish frees a slot even when it queues nothing).
   */
  #heard = 0;

  constructor(options: PostgresStoreOptions) {
    super();
    this.#target = resolveTarget(options.connectionString, options.schema);
    this.schema = this.#target.schema;
    this.#applicationName = options.applicationName ?? `idem:${this.schema}`;
    this.#channel = KEYS.channel(this.schema);
    this.#log = options.log;
    this.#reconnectWithinMs = options.reconnectWithinMs ?? 30_000;
    this.pool = new pg.Pool({
      ...clientConfig(this.#target, this.#applicationName),
      max: options.poolSize ?? 10,
      idleTimeoutMillis: 30_000,
      pipeline: true,
    });
    // An idle connection that dies (server restart, pg_terminate_backend) is dropped by the
    // pool; without a listener the error would end the process.
    this.pool.on("error", (error) => this.#log?.(`state store connection lost: ${error.message}`));
    // A connection can also die while checked out between two statements; pg then emits
    // "error" on the client, which would end the process. The next statement on it fails
    // instead, as a connection error, and the connection is discarded.
    this.pool.on("connect", (client) => client.on("error", () => {}));
    this.db = new Transactions(this.pool, this.#reconnectWithinMs);
  }

  // --- plumbing -----------------------------------------------------------------------------

  /** `from`: the worker whose own call this is, when the notice is for the other workers only. */
  #notify(tx: Tx, from = ""): void {
    void tx.send("notifyWork", [this.#channel, from]);
  }

  // --- lifecycle ------------------------------------------------------------------------------

  async migrate(): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query(SESSION_SQL.begin);
      // Two processes starting together: the second waits here, then finds nothing to do.
      await client.query(SESSION_SQL.lock, [KEYS.migrate(this.schema)]);
      if (this.#target.explicitSchema) {
        await client.query(SESSION_SQL.createSchema(quoteIdent(this.schema)));
        await client.query(SESSION_SQL.setSearchPath(quoteIdent(this.schema)));
      }
      await client.query(SESSION_SQL.createMigrationsTable);
      const applied = new Set((await client.query<Row>(SESSION_SQL.appliedVersions)).rows.map((r) => r.version as number));
      for (const migration of MIGRATIONS) {
        if (applied.has(migration.version)) continue;
        await client.query(migration.sql);
        await client.query(SESSION_SQL.recordVersion, [migration.version, migration.name, Date.now()]);
      }
      await client.query(SESSION_SQL.commit);
      client.release();
    } catch (error) {
      await client.query(SESSION_SQL.rollback).catch(() => {});
      client.release(error as Error);
      throw error;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.#listeners].map((l) => l.stop()));
    this.#listeners.clear();
    if (!(this.pool as unknown as { ended: boolean }).ended) await this.pool.end();
  }

  async watchWork(onWork: () => void, workerId?: string): Promise<() => Promise<void>> {
    const listener = new WorkListener(
      clientConfig(this.#target, `${this.#applicationName}:listen`),
      this.#channel,
      (from) => {
        if (workerId !== undefined && from === workerId) return; // its own call, for the others
        this.#heard++;
        onWork();
      },
      this.#log,
    );
    this.#listeners.add(listener);
    await listener.start();
    return async () => {
      this.#listeners.delete(listener);
      await listener.stop();
    };
  }

  // --- pipeline versions and runs ---------------------------------------------------------------

  async savePipelineVersion(v: NewPipelineVersion): Promise<void> {
    await this.db.tx(async (tx) => {
      const inserted = await tx.send("insertPipelineVersion", [v.pipelineId, v.version, JSON.stringify(v.definition), v.createdAt]);
      if (inserted.rowCount === 0 || v.edges.length === 0) return;
      await tx.send("insertEdges", [v.version, v.edges.map((e) => e.parent), v.edges.map((e) => e.child)]);
    });
  }

  async saveCodeVersion(v: CodeVersionRecord): Promise<void> {
    await this.db.idempotent("insertCodeVersion", [v.pipelineId, v.codeVersion, v.graphVersion, v.file, v.location, JSON.stringify(v.packages), v.createdAt, v.createdBy]);
  }

  async collectCodeVersion(request: { pipelineId: string; codeVersion: string; keepRunsSince: number; at: number }): Promise<boolean> {
    const { pipelineId, codeVersion, keepRunsSince, at } = request;
    return this.db.tx(async (tx) => {
      // The row lock first: a run being created on this version holds it shared until it commits,
      // and the runs are read after the lock is ours, so a run committed meanwhile is seen.
      const row = await tx.first("selectCodeVersionForCollection", [pipelineId, codeVersion]);
      if (!row) return false;
      if (row.collected_at !== null) return true;
      if (await tx.first("selectCodeVersionNeeded", [pipelineId, codeVersion, keepRunsSince])) return false;
      await tx.send("markCodeVersionCollected", [pipelineId, codeVersion, at]);
      return true;
    });
  }

  async createRunIfAbsent(run: NewRun): Promise<{ run: RunRecord; created: boolean }> {
    return this.#announcing(this.db.tx(async (tx) => {
      if (run.codeVersion) {
        const code = await tx.first("selectCodeVersionForRun", [run.pipelineId, run.codeVersion]);
        if (code && code.collected_at !== null) throw new StoreConflictError(collectedCodeMessage(run.pipelineId, run.codeVersion));
      }
      if (run.cursor !== undefined) {
        void tx.send("insertPipelineState", [run.pipelineId, run.createdAt]);
        void tx.send("advanceCursor", [run.pipelineId, run.cursor]);
      }
      const inserted = await tx.first("insertRun", [
        run.runId, run.pipelineId, run.intervalStart, run.intervalEnd, run.businessDate, run.trigger,
        run.triggeredBy, run.reason, run.graphVersion, JSON.stringify(run.params), run.createdAt, run.backfillId ?? null, run.codeVersion ?? null,
      ]);
      if (!inserted) {
        const existing = (await tx.first("selectRun", [run.runId])) ??
          (await tx.first("selectRunByInterval", [run.pipelineId, run.intervalStart, run.intervalEnd]));
        return { run: toRun(existing!), created: false };
      }
      this.#insertTaskInstances(tx, run.runId, run.tasks, run.createdAt, run.backfillId !== undefined);
      if (run.tasks.some((t) => !t.hasUpstream)) this.#notify(tx);
      return { run: toRun(inserted), created: true };
    }));
  }

  #insertTaskInstances(tx: Tx, runId: string, tasks: readonly NewTaskInstance[], at: number, fromBackfill: boolean): void {
    if (tasks.length === 0) return;
    void tx.send("insertTaskInstances", [
      runId,
      at,
      tasks.map((t) => t.taskId),
      tasks.map((t) => (t.hasUpstream ? "scheduled" : "queued")),
      tasks.map((t) => t.maxTries),
      tasks.map((t) => t.triggerRule),
      tasks.map((t) => t.pool),
      tasks.map((t) => t.slots),
      tasks.map((t) => t.priority),
      fromBackfill,
    ]);
  }

  async clearKeys(request: KeyClearRequest): Promise<{ keys: string[] }> {
    return this.#announcing(this.db.tx(async (tx) => {
      const { runId, taskId } = request;
      if (!(await tx.first("lockRun", [runId]))) throw new StoreConflictError(`no run ${runId}`);
      // The mapped task's row first (as an instance ending takes it), so no instance ends its task meanwhile.
      const counts = await tx.first("mapCounts", [runId, taskId]);
      const instances = await this.#keyCandidates(tx, runId, taskId, request.selector);
      // Only the matched keys' chained instances are read, each by its id.
      const chainStates = new Map<string, TaskState>();
      for (const key of matchedKeys(request.selector, instances)) {
        for (const link of request.chain) {
          const row = await tx.first("selectTaskInstance", [runId, mappedTaskId(link, key)]);
          if (row) chainStates.set(mappedTaskId(link, key), row.state as TaskState);
        }
      }
      const downstream: { taskId: string; state: TaskState }[] = [];
      for (const id of request.downstream) {
        const row = await tx.first("selectTaskInstance", [runId, id]);
        if (row) downstream.push({ taskId: id, state: row.state as TaskState });
      }
      const expanded = counts !== undefined && counts.map_total !== null;
      const plan = planKeyClear({ runId, taskId, selector: request.selector, expanded, instances, chain: request.chain, chainStates, downstream });
      if (plan.conflict !== undefined) throw new StoreConflictError(plan.conflict);
      const task = new Map(request.tasks.map((t) => [t.taskId, t]));
      const reset = (id: string, of: string) => {
        const t = task.get(of);
        if (!t) throw new StoreConflictError(`run ${runId}: no task ${of} in the request`);
        void tx.send("resetTaskInstance", [runId, id, t.maxTries, t.triggerRule, t.pool, t.slots, t.priority]);
      };
      for (const id of plan.instances) reset(id, parseMappedTaskId(id)!.taskId);
      for (const id of plan.downstream) reset(id, id);
      for (const mapped of plan.reopen) void tx.send("mapReopen", [runId, mapped]);
      // The named task's instances wait on nothing but maxActive; chained ones wait for their key's parent.
      const maxActive = counts!.map_max_active as number | null;
      if (maxActive === null) {
        const ids = plan.keys.map((key) => mappedTaskId(taskId, key));
        void tx.send("settleTaskInstancesOfRuns", [ids.map(() => runId), ids, ids.map(() => "queued"), ids.map(() => null), ids.map(() => request.at)]);
      } else {
        await this.#fillMaxActive(tx, runId, taskId, Number(maxActive), request.at);
      }
      // The cleared keys' remote jobs: nobody waits on them now (core's planKeyClear refused any running).
      void tx.send("requestExternalCancels", [runId, "cleared: the task runs again"]);
      void tx.send("reopenRun", [runId]);
      this.#notify(tx);
      return { keys: plan.keys };
    }));
  }

  async markKeys(request: KeyMarkRequest): Promise<{ keys: string[]; marked: string[] }> {
    return this.#announcing(this.db.tx(async (tx) => {
      const { runId, taskId } = request;
      const run = await tx.first("lockRun", [runId]);
      if (!run) throw new StoreConflictError(`no run ${runId}`);
      const counts = await tx.first("mapCounts", [runId, taskId]);
      const expanded = counts !== undefined && counts.map_total !== null;
      const instances = await this.#keyCandidates(tx, runId, taskId, request.selector);
      const plan = planKeyMark({ runId, taskId, selector: request.selector, state: request.state, expanded, instances });
      if (plan.conflict !== undefined) throw new StoreConflictError(plan.conflict);
      const reason = request.state === "success" ? null : `marked failed: ${request.reason}`;
      for (const id of plan.settle) {
        // Locked now: a claim may have started it since it was read, which refuses the whole mark.
        const ti = await tx.first("lockTaskInstance", [runId, id]);
        const refusal = settleByHandRefusal(runId, id, { run: true, taskState: ti?.state ?? null });
        if (refusal !== null) throw new StoreConflictError(refusal);
        await this.#settleOneByHand(tx, run, { runId, taskId: id, reason: request.reason, at: request.at }, ti!.state as TaskState, request.state, reason);
      }
      return { keys: plan.matched, marked: plan.settle };
    }, { once: true }));
  }

  /** The instances of a mapped task an operator's selector may name, read as core's keyLookup says. */
  async #keyCandidates(tx: Tx, runId: string, taskId: string, selector: string): Promise<{ key: string; state: TaskState }[]> {
    const lookup = keyLookup(selector);
    const rows = lookup.kind === "key" ? await tx.rows("mapInstanceOfKey", [runId, taskId, lookup.key])
      : lookup.kind === "all" ? await tx.rows("mapExistingKeys", [runId, taskId])
      : lookup.to === null ? await tx.rows("mapInstancesFrom", [runId, taskId, lookup.from])
      : await tx.rows("mapInstancesInRange", [runId, taskId, lookup.from, lookup.to]);
    return rows.map((r) => ({ key: r.map_key as string, state: r.state as TaskState }));
  }

  /** maxActive: queues held instances (by position) into the places the active ones leave. */
  async #fillMaxActive(tx: Tx, runId: string, taskId: string, maxActive: number, at: number): Promise<void> {
    const active = Number((await tx.first("mapActive", [runId, taskId]))!.n);
    for (let free = maxActive - active; free > 0; free--) {
      if ((await tx.send("mapReleaseHeld", [runId, taskId, at])).rowCount === 0) break;
    }
  }

  async rerun(request: RerunRequest): Promise<RunRecord> {
    return this.#announcing(this.db.tx(async (tx) => {
      const run = await tx.first("lockRun", [request.runId]);
      if (!run) throw new StoreConflictError(`no run ${request.runId}`);
      if (request.restate) assertRestatable(run, request.restate.endedBefore);
      // Locked, so no claim takes a task while it is being reset (claims skip locked rows).
      const current = await tx.rows("lockTaskInstancesOfRun", [request.runId]);
      const existing = new Map(current.map((r) => [r.task_id as string, r.state as TaskState]));
      const plan = planRerun(request.runId, existing, request.tasks.map((t) => t.taskId), request.taskIds);
      if (plan.conflict !== undefined) throw new StoreConflictError(plan.conflict);
      if (plan.removed.length > 0) void tx.send("deleteTaskInstances", [request.runId, plan.removed]);
      const added = new Set(plan.added);
      const reset = new Set(plan.reset);
      this.#insertTaskInstances(tx, request.runId, request.tasks.filter((t) => added.has(t.taskId)), request.at, run.backfill_id !== null);
      for (const task of request.tasks) {
        if (!added.has(task.taskId) && reset.has(task.taskId)) {
          void tx.send("resetTaskInstance", [request.runId, task.taskId, task.maxTries, task.triggerRule, task.pool, task.slots, task.priority]);
        }
      }
      if (request.taskIds) void tx.send("reopenRun", [request.runId]);
      else void tx.send("requeueRun", [request.runId, request.graphVersion, JSON.stringify(request.params)]);
      if (request.backfill) {
        void tx.send("joinBackfill", [request.runId, request.backfill.backfillId, request.backfill.triggeredBy, request.backfill.reason]);
      }
      if (request.restate) {
        void tx.send("markRestated", [request.runId, request.restate.triggeredBy, request.restate.reason, request.at]);
      }
      const moves = request.codeVersion !== undefined;
      if (moves) void tx.send("repinRun", [request.runId, request.codeVersion, request.graphVersion]);
      const graphVersion = request.taskIds && !moves ? (run.graph_version as string) : request.graphVersion;
      // Reset tasks whose upstream allows it become eligible now; the rest wait for their parents.
      const progress = new RunProgress();
      const waiting = await tx.rows("waitingTasksWithParents", [request.runId, graphVersion, plan.reset]);
      progress.settleEach(plan.reset, waitingTasks(waiting), request.at);
      await this.#sendSettlements(tx, request.runId, progress);
      if (!request.resume) void tx.send("requestExternalCancels", [request.runId, request.restate ? "restated: the run runs again" : "cleared: the task runs again"]);
      await this.#finishRunIfDone(tx, request.runId, request.at, true);
      return toRun((await tx.first("selectRun", [request.runId]))!);
    }, { once: true }));
  }

  // --- claiming -------------------------------------------------------------------------------

  async claimReady(request: ClaimRequest): Promise<ClaimedAttempt[]> {
    // Work announced while a claim was on its way may have been committed after the claim read
    // the queue, and the caller, busy waiting for this claim, missed the wake-up: look again.
    for (let again = 0; ; again++) {
      const heard = this.#heard;
      const claimed = await this.#claimOnce(request);
      if (claimed.length > 0 || this.#heard === heard || again === 3) return claimed;
    }
  }

  async #claimOnce(request: ClaimRequest): Promise<ClaimedAttempt[]> {
    return this.db.tx(async (tx) => {
      const claim = await this.#claimIn(tx, request);
      return claim.taken === 0 ? [] : new AfterCommit(() => claim.attempts);
    }, { once: true }); // a claim that may have happened is left to expire, not doubled
  }

  /**
   * A claim inside the caller's transaction: `taken` is known before COMMIT goes out, the
   * attempts (the rows the starts return) are read with it.
   */
  async #claimIn(tx: Tx, request: ClaimRequest): Promise<{ taken: number; attempts: Promise<ClaimedAttempt[]> }> {
    const none = { taken: 0, attempts: Promise.resolve([]) };
    const limits = request.limits ?? {};
    // Lock only as many rows as wanted, so concurrent claimers find the rest; look further
    // only when some candidates did not fit their pool or their pipeline's cap.
    const wide = request.limit * 4 + 32;
    const caps = new ClaimLocks(this.schema);
    const capped = caps.lockCapped(tx, limits);
    let scan = request.limit;
    for (;;) {
      const candidates = request.runId
        ? await tx.rows("selectRunCandidates", [request.runId, request.now, scan])
        : request.backfillId
        ? await tx.rows("selectBackfillCandidates", [request.backfillId, request.now, scan])
        : await tx.rows("selectCandidates", [request.now, scan]);
      await capped;
      if (candidates.length === 0) return none;
      await caps.loadPools(tx, candidates);
      const rows = candidates.map(claimCandidate);
      const plan = planClaim(rows, { ...limits, limit: request.limit, now: request.now, pipelineIds: request.pipelineIds }, caps.counts(rows));
      const exhausted = request.runId || request.backfillId
        ? candidates.length < scan
        : candidates.filter((c) => c.grp === 0).length < scan && candidates.filter((c) => c.grp === 1).length < scan;
      if (plan.chosen.length < request.limit && plan.passedOver && !exhausted && scan < wide) {
        scan = wide;
        continue;
      }
      if (plan.chosen.length === 0) return none;
      const attempts = observed(this.#startAttempts(tx, plan.chosen.map((c) => c.row), request));
      // Rows locked but not taken were invisible to other claimers meanwhile: wake them.
      if (plan.unconsidered > 0) this.#notify(tx, request.workerId);
      return { taken: plan.chosen.length, attempts };
    }
  }

  async #startAttempts(tx: Tx, chosen: Row[], request: ClaimRequest): Promise<ClaimedAttempt[]> {
    const tries = chosen.map((c) => nextTryNumber({ state: c.state, tryNumber: c.try_number }));
    const logPaths = chosen.map((c, i) => attemptLogPath(request.logDir, c.run_id, c.task_id, tries[i]!));
    const leaseExpiresAt = request.now + request.leaseMs;
    const rows = await tx.rows("startAttempts", [
      chosen.map((c) => c.run_id),
      chosen.map((c) => c.task_id),
      tries,
      logPaths,
      request.workerId,
      request.pid,
      request.now,
      leaseExpiresAt,
    ]);
    // When each became ready is the candidate's; the statement returns what it wrote.
    const readySince = new Map(chosen.map((c) => [`${c.run_id}\0${c.task_id}`, c.waited_since]));
    return rows.map((r) => toClaimedAttempt({ ...r, waited_since: readySince.get(`${r.run_id}\0${r.task_id}`) ?? null }, leaseExpiresAt));
  }

  async renewLease(attemptId: number, workerId: string, leaseExpiresAt: number): Promise<boolean> {
    return (await this.db.idempotent("renewLease", [leaseExpiresAt, attemptId, workerId])).rowCount === 1;
  }

  // --- finishing ------------------------------------------------------------------------------

  async finishAttempt(f: AttemptFinish): Promise<FinishOutcome> {
    assertSummaryFits(f.summary);
    if (!recordedAlone(f)) return this.#groupCommit.finish(f);
    return this.#finishOne(f);
  }

  /** `announce`: called when the finishes made work claimable or ended a run (by default, a NOTIFY). */
  async #recordFinishes(tx: Tx, finishes: readonly AttemptFinish[], announce = () => this.#notify(tx)): Promise<AfterCommit<FinishOutcome[]>> {
    const ids = finishes.map((f) => f.attemptId);
    const retryAt = (f: AttemptFinish) => (f.outcome === "failed" && f.retryable ? f.retryAt : null);
    const outcome = (f: AttemptFinish) => f.outcome as "success" | "failed" | "skipped";
    const ends = new Map<number, TryEnd>();
    for (const f of finishes) {
      const known = endTryKnown(outcome(f), retryAt(f), f.skipReason, f.now);
      if (known) ends.set(f.attemptId, known);
    }
    // One round trip: the attempts still current, locked with their runs; the waiting children of
    // their tasks with their parents' states; the ends that need no row (no retry asked for); and
    // whether anything in their runs is still live after those.
    const locked = tx.rows("lockAttemptsForFinish", [ids, finishes.map((f) => f.workerId)]);
    this.#sendStartedAt(tx, finishes);
    const children = tx.rows("waitingChildrenOfAttempts", [ids]);
    this.#sendEnds(tx, finishes.filter((f) => ends.has(f.attemptId)), ends);
    const progressed = tx.rows("runsProgressOfAttempts", [ids]);
    const [lockedRows, childRows, progressRows] = await Promise.all([locked, children, progressed]);
    const current = new Map(lockedRows.filter((r) => isCurrentAttempt(r, Number(r.attempt_id))).map((r) => [Number(r.attempt_id), r]));
    // The rest needed the tries left: decided now, written with the decisions.
    const late = finishes.filter((f) => current.has(f.attemptId) && !ends.has(f.attemptId));
    for (const f of late) {
      const a = current.get(f.attemptId)!;
      ends.set(f.attemptId, endTry({ tryNumber: a.try_number, maxTries: a.max_tries }, outcome(f), retryAt(f), f.skipReason, f.now));
    }
    this.#sendEnds(tx, late, ends);
    const endOf = (f: AttemptFinish) => ends.get(f.attemptId)!;

    const runs = new Map<string, { graphVersion: string; progress: RunProgress }>();
    const childrenOfRun = new Map<string, Row[]>();
    for (const c of childRows) {
      if (!childrenOfRun.has(c.run_id)) childrenOfRun.set(c.run_id, []);
      childrenOfRun.get(c.run_id)!.push(c);
    }
    for (const a of current.values()) {
      let run = runs.get(a.run_id);
      if (!run) {
        run = { graphVersion: a.graph_version, progress: new RunProgress() };
        runs.set(a.run_id, run);
      }
      const children = waitingTasksByParent(childrenOfRun.get(a.run_id) ?? []).get(a.task_id) ?? [];
      // A mapped instance's chained instances wait on it alone (rare: read only for mapped instances).
      if (parseMappedTaskId(a.task_id)) children.push(...waitingTasks(await tx.rows("mapChainedChildren", [a.run_id, a.task_id])));
      run.progress.childrenRead(a.task_id, children);
      // Not yet settled, as far as the finishes before it in the batch are concerned.
      run.progress.know(a.task_id, "running");
    }
    // A pool slot given back may let a task that waits for it start, on any worker.
    let madeEligible = [...current.values()].some((a) => a.pool !== null);
    const lastOfRun = new Map<string, number>();
    const retrying = new Set<string>();
    // Runs where a mapped task ended with its last instance: read after it, like a late end.
    const mappedSettled = new Set<string>();
    for (const [i, f] of finishes.entries()) {
      const a = current.get(f.attemptId);
      if (!a) continue;
      const run = runs.get(a.run_id)!;
      const end = endOf(f);
      if (end.state !== "up_for_retry") {
        run.progress.settled(a.task_id, end.state, f.now);
        const mapped = await this.#mappedInstanceEnded(tx, a.run_id, a.task_id, f.now, run.progress);
        if (mapped.released) madeEligible = true;
        if (mapped.settled) mappedSettled.add(a.run_id);
        await this.#readDownstream(tx, a.run_id, run.graphVersion, run.progress);
      } else {
        run.progress.know(a.task_id, end.state);
        retrying.add(a.run_id);
        if (end.nextTryAt !== null && end.nextTryAt <= f.now) madeEligible = true;
      }
      lastOfRun.set(a.run_id, i);
    }
    for (const [runId, run] of runs) {
      if (await this.#sendSettlements(tx, runId, run.progress)) madeEligible = true;
      if (await this.#settleMappedOf(tx, runId, run.progress.decided, run.progress)) {
        if (await this.#decideAll(tx, runId, run.graphVersion, run.progress, run.progress.decided.length)) madeEligible = true;
        mappedSettled.add(runId);
      }
    }

    // The progress read with the first round trip holds, unless a late end or a decision that
    // settled a task without running it changed a run after it; such a run is read again, unless
    // the decisions show it live. When none is, COMMIT goes out with the writes.
    const changed = new Set(late.map((f) => current.get(f.attemptId)!.run_id as string));
    for (const [runId, run] of runs) if (run.progress.settledWithoutRunning || mappedSettled.has(runId)) changed.add(runId);
    const again = [...changed].filter((runId) => !retrying.has(runId) && !runs.get(runId)!.progress.keepsRunLive);
    const live = new Map<string, Row>(progressRows.map((p) => [p.run_id, p]));
    for (const runId of changed) live.delete(runId);
    for (const p of again.length > 0 ? await tx.rows("runsProgress", [again]) : []) live.set(p.run_id, p);
    const runStates = new Map<string, RunState>();
    for (const runId of runs.keys()) {
      const p = live.get(runId);
      const state = p ? runEnd(p as { live: boolean; failed: boolean }) : null;
      if (state) runStates.set(runId, state);
    }
    const ending = [...runStates.keys()];
    const endedAt = (runId: string) => finishes[lastOfRun.get(runId)!]!.now;
    if (ending.length > 0) void tx.send("finishRuns", [ending, ending.map((r) => runStates.get(r)!), ending.map(endedAt)]);
    if (madeEligible || ending.length > 0) announce();

    const refused = finishes.filter((f) => !current.has(f.attemptId)).map((f) => f.attemptId);
    const refusedStates = refused.length > 0 ? tx.rows("taskStatesOfAttempts", [refused]) : Promise.resolve([]);
    return new AfterCommit(async () => {
      const stateOf = new Map((await refusedStates).map((r) => [Number(r.attempt_id), r.state as TaskState | null]));
      return finishes.map((f, i): FinishOutcome => {
        const a = current.get(f.attemptId);
        if (!a) return { accepted: false, taskState: stateOf.get(f.attemptId) ?? null, runState: null };
        return { accepted: true, taskState: endOf(f).state, runState: lastOfRun.get(a.run_id) === i ? (runStates.get(a.run_id) ?? null) : null };
      });
    });
  }

  /** Sends attempts' ends (fenced in SQL: an attempt no longer current is left alone), in one statement. */
  #sendEnds(tx: Tx, finishes: readonly AttemptFinish[], ends: ReadonlyMap<number, TryEnd>): void {
    if (finishes.length === 0) return;
    const end = (f: AttemptFinish) => ends.get(f.attemptId)!;
    void tx.send("finishAttempts", [
      finishes.map((f) => f.attemptId), finishes.map((f) => f.workerId), finishes.map((f) => f.outcome), finishes.map((f) => f.now),
      finishes.map((f) => f.exitCode), finishes.map((f) => f.errorClass), finishes.map((f) => f.errorMessage), finishes.map((f) => f.summary),
      finishes.map((f) => end(f).state), finishes.map((f) => end(f).nextTryAt), finishes.map((f) => end(f).reason), finishes.map((f) => end(f).endedAt),
    ]);
  }

  /** Starts later than their claims (attempts that waited in a worker's queue), before their ends: fenced in SQL. */
  #sendStartedAt(tx: Tx, finishes: readonly AttemptFinish[]): void {
    const late = finishes.filter((f) => f.startedAt !== undefined);
    if (late.length === 0) return;
    void tx.send("recordStartedAt", [late.map((f) => f.attemptId), late.map((f) => f.workerId), late.map((f) => f.startedAt!)]);
  }

  /** One attempt on its own: a sensor's reschedule, or a success that records datasets. */
  async #finishOne(f: AttemptFinish): Promise<FinishOutcome> {
    return this.#announcing(this.db.tx((tx) => this.#finishOneIn(tx, f, () => this.#notify(tx))));
  }

  async #finishOneIn(tx: Tx, f: AttemptFinish, announce: () => void): Promise<FinishOutcome> {
    const a = await tx.first("lockAttemptForFinish", [f.attemptId]);
    if (!isCurrentAttempt(a, f.attemptId) || a!.worker_id !== f.workerId) {
      return { accepted: false, taskState: (a?.ti_state as TaskState) ?? null, runState: null };
    }
    this.#sendStartedAt(tx, [f]);
    if (f.outcome === "success" && f.datasets && f.datasets.length > 0) {
      void tx.send("lockDatasetEventsForWrite", [KEYS.datasetEvents(this.schema)]);
      void tx.send("insertDatasetEvents", [[...f.datasets], a!.business_date, a!.run_id, a!.pipeline_id, a!.task_id, a!.trigger_kind, f.now]);
    }
    if (f.outcome === "success" && f.publishes && f.publishes.length > 0) {
      void tx.send("upsertFreshness", [
        f.publishes.map((p) => p.dataset), f.publishes.map((p) => p.emptyReason),
        a!.business_date, f.now, a!.pipeline_id, a!.run_id, a!.task_id, f.summary, a!.trigger_kind,
      ]);
    }
    if (f.outcome === "rescheduled") {
      const nextTryAt = f.retryAt ?? f.now;
      void tx.send("rescheduleAttempt", [
        f.attemptId, f.now, f.exitCode, f.errorClass, f.errorMessage, f.summary, a!.run_id, a!.task_id, nextTryAt,
      ]);
      if (nextTryAt <= f.now) announce(); // handed back: claimable now, by anyone
      return { accepted: true, taskState: "up_for_reschedule", runState: null };
    }
    if (f.outcome === "success" && f.map) return this.#expand(tx, a!, f, announce);
    return this.#endTry(tx, a!, f.outcome, f.outcome === "failed" && f.retryable ? f.retryAt : null, f.skipReason, f.now, (ti) =>
      void tx.send("endAttempt", [
        f.attemptId, f.outcome, f.now, f.exitCode, f.errorClass, f.errorMessage, f.summary,
        a!.run_id, a!.task_id, ti.state, ti.nextTryAt, ti.reason, ti.endedAt,
      ]),
    announce);
  }

  /** Counts a write that may have made work claimable, once it has committed. */
  async #announcing<T>(write: Promise<T>): Promise<T> {
    const result = await write;
    this.#heard++;
    return result;
  }

  /** Ends a try: a retry if one is allowed, else a final state that flows downstream. */
  async #endTry(
    tx: Tx,
    a: Row,
    outcome: "success" | "failed" | "skipped",
    retryAt: number | null,
    skipReason: string | null,
    now: number,
    record: (end: TryEnd) => void,
    announce: () => void,
  ): Promise<FinishOutcome> {
    const end = endTry({ tryNumber: a.try_number, maxTries: a.max_tries }, outcome, retryAt, skipReason, now);
    record(end);
    let madeEligible = end.nextTryAt !== null && end.nextTryAt <= now;
    if (end.state !== "up_for_retry") {
      const progress = new RunProgress();
      progress.settled(a.task_id, end.state, now);
      const { released } = await this.#mappedInstanceEnded(tx, a.run_id, a.task_id, now, progress);
      madeEligible = (await this.#decideAll(tx, a.run_id, a.graph_version, progress)) || released;
    }
    const runState = await this.#finishRunIfDone(tx, a.run_id, now, madeEligible, announce);
    return { accepted: true, taskState: end.state, runState };
  }

  /**
   * A mapped task's first step ended with its list: its instances are written (a rerun's list
   * diffed by key with the instances the run has) in chunked statements, its counts set, and it
   * waits for them, or settles at once when nothing is left to run (an empty list).
   */
  async #expand(tx: Tx, a: Row, f: AttemptFinish, announce: () => void): Promise<FinishOutcome> {
    const { items, maxActive, chained = [] } = f.map!;
    const runId = a.run_id as string;
    const taskId = a.task_id as string;
    void tx.send("endExpansionAttempt", [f.attemptId, f.now, f.exitCode, f.summary]);
    await this.#writeExpansion(tx, runId, taskId, items, maxActive, a.max_tries - a.try_number + 1, null, f.now);
    for (const link of chained) {
      const row = await tx.first("mapCounts", [runId, link.taskId]);
      if (row) await this.#writeExpansion(tx, runId, link.taskId, items, link.maxActive ?? null, row.max_tries - row.try_number, link.parent, f.now);
    }
    const progress = new RunProgress();
    const settled = await this.#mappedTaskCheck(tx, runId, taskId, f.now, progress);
    for (const link of chained) await this.#mappedTaskCheck(tx, runId, link.taskId, f.now, progress);
    const madeEligible = (await this.#decideAll(tx, runId, a.graph_version, progress)) || (settled === null && items.length > 0);
    const runState = await this.#finishRunIfDone(tx, runId, f.now, madeEligible, announce);
    return { accepted: true, taskState: settled ?? "scheduled", runState };
  }

  /** One mapped task's instances for a list: chunked inserts (added keys), resets (kept keys), removals; then its counts. */
  async #writeExpansion(tx: Tx, runId: string, taskId: string, items: readonly MappedItem[], maxActive: number | null,
    tries: number, parent: string | null, now: number): Promise<void> {
    const existing = (await tx.rows("mapExistingKeys", [runId, taskId])).map((r) => ({ key: r.map_key as string, removed: r.state === "removed" }));
    const writes = expansionWrites(existing, items, maxActive, parent !== null);
    const columns = (rows: readonly (readonly [string, number, string, string])[]) =>
      [rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => r[2]), rows.map((r) => r[3])];
    for (const rows of writes.insert) void tx.send("mapInsert", [runId, taskId, now, ...columns(rows), tries, parent]);
    for (const rows of writes.reset) void tx.send("mapResetKept", [runId, taskId, now, ...columns(rows), tries]);
    for (const keys of writes.removed) void tx.send("mapRemove", [runId, taskId, now, REMOVED_REASON, keys]);
    void tx.send("mapRecount", [runId, taskId, maxActive]);
  }

  /**
   * Decides what a run's settled tasks make of their waiting children, sends the decisions, and
   * goes on while a chained instance settled without running ends its mapped task. `sent`: how
   * many of `progress.decided` were sent already. True when a task became eligible.
   */
  async #decideAll(tx: Tx, runId: string, graphVersion: string, progress: RunProgress, sent = 0): Promise<boolean> {
    let madeEligible = false;
    for (;;) {
      await this.#readDownstream(tx, runId, graphVersion, progress);
      const fresh = progress.decided.slice(sent);
      sent = progress.decided.length;
      if (await this.#sendDecisions(tx, runId, fresh)) madeEligible = true;
      if (!(await this.#settleMappedOf(tx, runId, fresh, progress))) return madeEligible;
    }
  }

  /** Ends the mapped tasks of chained instances these decisions settled without running, if they were their last; true if one ended. */
  async #settleMappedOf(tx: Tx, runId: string, decided: readonly Settlement[], progress: RunProgress): Promise<boolean> {
    let settled = false;
    for (const d of decided) {
      const mapped = d.state === "queued" ? null : parseMappedTaskId(d.taskId);
      if (mapped && (await this.#mappedTaskCheck(tx, runId, mapped.taskId, d.at, progress)) !== null) settled = true;
    }
    return settled;
  }

  /**
   * A mapped instance reached a final state (its end already sent): a held instance takes its
   * place, and its mapped task may end: whether a held instance was queued, and whether the
   * mapped task settled.
   */
  async #mappedInstanceEnded(tx: Tx, runId: string, taskId: string, at: number, progress: RunProgress, heldPlace = true): Promise<{ released: boolean; settled: boolean }> {
    const mapped = parseMappedTaskId(taskId);
    if (!mapped) return { released: false, settled: false };
    const counts = await tx.first("mapCounts", [runId, mapped.taskId]);
    let released = false;
    if (heldPlace && counts?.map_max_active !== null && counts?.map_max_active !== undefined) {
      // A chained instance's place goes to the first one held eligible; another's to the first held by position.
      const chained = (await tx.first("mapParentOf", [runId, taskId]))?.map_parent != null;
      released = (await tx.send(chained ? "mapReleaseReady" : "mapReleaseHeld", [runId, mapped.taskId, at])).rowCount === 1;
    }
    const settled = (await this.#mappedTaskCheck(tx, runId, mapped.taskId, at, progress)) !== null;
    return { released, settled };
  }

  /**
   * The chained instances these decisions made eligible that their mapped task's maxActive holds
   * back (core's admitUnderMaxActive), counted under the mapped task's row lock (mapCounts), as
   * its instances' ends take it.
   */
  async #heldUnderMaxActive(tx: Tx, runId: string, decided: readonly Settlement[]): Promise<Set<string>> {
    const eligible = decided.filter((d) => d.state === "queued" && parseMappedTaskId(d.taskId)).map((d) => d.taskId);
    if (eligible.length === 0) return new Set();
    const room = new Map<string, number>();
    for (const mapped of new Set(eligible.map((id) => parseMappedTaskId(id)!.taskId))) {
      const maxActive = (await tx.first("mapCounts", [runId, mapped]))?.map_max_active;
      if (maxActive !== null && maxActive !== undefined) room.set(mapped, Number(maxActive) - Number((await tx.first("mapActive", [runId, mapped]))!.n));
    }
    return new Set(admitUnderMaxActive(eligible, room).hold);
  }

  /** Settles a mapped task whose instances have all ended (core's mappedTaskEnd); its state, or null while it waits. */
  async #mappedTaskCheck(tx: Tx, runId: string, taskId: string, at: number, progress: RunProgress): Promise<TaskState | null> {
    const counts = await tx.first("mapCounts", [runId, taskId]);
    if (!counts || counts.state !== "scheduled" || counts.map_total === null) return null;
    const end = mappedTaskEnd({ live: Number(counts.map_live), failing: Number(counts.map_failing), total: Number(counts.map_total) });
    if (!end) return null;
    void tx.send("mapSettle", [runId, taskId, end.state, end.reason, at]);
    progress.settled(taskId, end.state, at);
    return end.state;
  }

  /** Reads the waiting children core's RunProgress asks for (the run is locked) until it has decided everything. */
  async #readDownstream(tx: Tx, runId: string, graphVersion: string, progress: RunProgress): Promise<void> {
    for (let parent = progress.next(); parent !== null; parent = progress.next()) {
      const children = waitingTasks(await tx.rows("waitingChildrenWithParents", [runId, graphVersion, parent]));
      // A mapped instance's chained instances (the same key, mapped by key over its task) wait on it alone.
      if (parseMappedTaskId(parent)) children.push(...waitingTasks(await tx.rows("mapChainedChildren", [runId, parent])));
      progress.childrenRead(parent, children);
    }
  }

  /** Sends a run's trigger-rule decisions in one statement; true when a task became eligible to run. */
  #sendSettlements(tx: Tx, runId: string, progress: RunProgress): Promise<boolean> {
    return this.#sendDecisions(tx, runId, progress.decided);
  }

  async #sendDecisions(tx: Tx, runId: string, all: readonly Settlement[]): Promise<boolean> {
    const held = await this.#heldUnderMaxActive(tx, runId, all);
    if (held.size > 0) void tx.send("mapHold", [runId, [...held], all.find((d) => held.has(d.taskId))!.at]);
    const decided = held.size > 0 ? all.filter((d) => !held.has(d.taskId)) : all;
    if (decided.length === 0) return false;
    void tx.send("settleTaskInstancesOfRuns", [
      decided.map(() => runId), decided.map((d) => d.taskId), decided.map((d) => d.state), decided.map((d) => d.reason), decided.map((d) => d.at),
    ]);
    return decided.some((d) => d.state === "queued");
  }

  /**
   * Finishes the run when nothing in it is live. Its callers hold the run row already (taking it
   * again costs nothing and keeps this safe alone), so of two last tasks ending at once the
   * second sees the first. Notifies when work became eligible or the run ended (a scheduler
   * waiting on the run cap may start the next).
   */
  async #finishRunIfDone(tx: Tx, runId: string, now: number, madeEligible: boolean, announce = () => this.#notify(tx)): Promise<RunState | null> {
    void tx.send("lockRun", [runId]);
    const state = runEnd((await tx.first("runProgress", [runId])) as { live: boolean; failed: boolean });
    if (!state) {
      if (madeEligible) announce();
      return null;
    }
    void tx.send("finishRun", [runId, state, now]);
    announce();
    return state;
  }

  async appendAudit(e: NewAuditEntry): Promise<AuditEntry> {
    const inserted = await this.db.write("insertAudit", auditParams(e));
    return toAuditEntry(inserted.rows[0]!);
  }

  // --- scheduling -----------------------------------------------------------------------------

  async pipelineState(pipelineId: string, at: number): Promise<PipelineState> {
    return this.db.tx(async (tx) => {
      void tx.send("insertPipelineState", [pipelineId, at]);
      return toPipelineState((await tx.first("selectPipelineState", [pipelineId]))!);
    });
  }

  async setPaused(r: PauseRequest): Promise<PipelineState> {
    return this.db.tx(async (tx) => {
      void tx.send("insertPipelineState", [r.pipelineId, r.at]);
      return toPipelineState((await tx.first("setPaused", [r.pipelineId, r.paused, r.note, r.actor, r.at]))!);
    });
  }

  async skipIntervals(r: SkipIntervalsRequest): Promise<void> {
    await this.db.tx(async (tx) => {
      void tx.send("insertPipelineState", [r.pipelineId, r.at]);
      if (r.intervals.length > 0) {
        void tx.send("insertSkippedIntervals", [
          r.pipelineId, r.reason, r.at,
          r.intervals.map((i) => i.start), r.intervals.map((i) => i.end), r.intervals.map((i) => i.businessDate),
        ]);
      }
      void tx.send("advanceCursor", [r.pipelineId, r.cursor]);
    });
  }

  // --- pools ----------------------------------------------------------------------------------

  async setPool(pool: { name: string; slots: number; description?: string | null; at: number }): Promise<void> {
    await this.db.idempotent("upsertPool", [pool.name, pool.slots, pool.description ?? null, pool.at]);
  }

  async ensurePools(pools: readonly { name: string; slots: number }[], at: number): Promise<void> {
    if (pools.length === 0) return;
    await this.db.idempotent("insertPoolsIfAbsent", [pools.map((p) => p.name), pools.map((p) => p.slots), at]);
  }

  async deletePool(name: string): Promise<boolean> {
    return (await this.db.write("deletePool", [name])).rowCount === 1;
  }

  // --- workers, leases, leadership --------------------------------------------------------------

  async heartbeatWorker(w: { workerId: string; host: string; pid: number; concurrency: number; at: number }): Promise<void> {
    await this.db.idempotent("upsertWorker", [w.workerId, w.host, w.pid, w.concurrency, w.at]);
  }

  async removeWorker(workerId: string): Promise<void> {
    await this.db.idempotent("deleteWorker", [workerId]);
  }

  async loseAttempt(r: { attemptId: number; now: number; retryAt: number | null }): Promise<FinishOutcome> {
    return this.#announcing(this.db.tx(async (tx): Promise<FinishOutcome> => {
      const a = await tx.first("lockAttemptForFinish", [r.attemptId]);
      if (!isCurrentAttempt(a, r.attemptId) || a!.lease_expires_at === null || a!.lease_expires_at >= r.now) {
        return { accepted: false, taskState: (a?.ti_state as TaskState) ?? null, runState: null };
      }
      void tx.send("loseAttempt", [r.attemptId, r.now, `worker ${a!.worker_id} stopped renewing its lease: presumed dead`]);
      const outcome = await this.#endTry(tx, a!, "failed", r.retryAt, null, r.now, (ti) =>
        void tx.send("setTaskState", [a!.run_id, a!.task_id, ti.state, ti.nextTryAt, ti.reason, ti.endedAt]),
      () => this.#notify(tx));
      void tx.send("requestExternalCancels", [a!.run_id, "the task instance failed for good: its attempt was lost with no try left"]);
      return outcome;
    }));
  }

  async tryLead(r: { role: string; holder: string; now: number; ttlMs: number }): Promise<Leadership> {
    return this.db.tx(async (tx) => {
      const taken = await tx.first("tryLead", [r.role, r.holder, r.now + r.ttlMs, r.now]);
      return toLeadership(taken ?? (await tx.first("selectLease", [r.role]))!, r.holder);
    });
  }

  async resignLead(role: string, holder: string): Promise<void> {
    await this.db.idempotent("resignLease", [role, holder]);
  }

  // --- datasets -------------------------------------------------------------------------------

  async collectDatasetEvents(pipelineId: string, datasets: readonly string[]): Promise<Map<string, Set<string>>> {
    return this.db.tx(async (tx) => {
      void tx.send("insertPipelineState", [pipelineId, 0]);
      const cursor = (await tx.first("lockPipelineState", [pipelineId]))!.event_cursor as number;
      // Waits for transactions still writing events: an id below `upTo` that committed later
      // would otherwise be passed over for good.
      void tx.send("lockDatasetEventsForRead", [KEYS.datasetEvents(this.schema)]);
      const upTo = (await tx.first("maxDatasetEventId"))!.id as number;
      if (datasets.length > 0) {
        for (const e of await tx.rows("selectDatasetEventsAfter", [[...datasets], cursor, upTo])) {
          void tx.send("upsertDatasetWait", [pipelineId, e.business_date, e.dataset, e.id]);
        }
      }
      void tx.send("setEventCursor", [pipelineId, upTo]);
      return datasetWaits(await tx.rows("selectDatasetWaits", [pipelineId]));
    });
  }

  async consumeDatasetWaits(pipelineId: string, businessDate: string): Promise<void> {
    await this.db.idempotent("deleteDatasetWaits", [pipelineId, businessDate]);
  }

  /**
   * A second sender of the same key waits at the unique index for the first to commit, then
   * inserts nothing and reads the first's row (a new snapshot per statement). Safe to run again
   * after a broken connection: a second try finds the key and writes nothing.
   */
  async recordExternalDatasetEvent(r: NewExternalDatasetEvent): Promise<ExternalDatasetEventRecorded> {
    assertSummaryFits(r.summary);
    return this.db.tx(async (tx) => {
      void tx.send("lockDatasetEventsForWrite", [KEYS.datasetEvents(this.schema)]);
      const row = await tx.first("insertExternalDatasetEvent", [r.dataset, r.businessDate, r.at, r.source, r.actor, r.idempotencyKey, r.summary]);
      if (!row) {
        const first = (await tx.first("selectDatasetEventByKey", [r.dataset, r.idempotencyKey]))!;
        return { event: mappers.toDatasetEvent(first) as ExternalDatasetEvent, created: false, audit: null };
      }
      const e = r.audit;
      const audit = await tx.first("insertAudit", [
        e.at, e.actor, e.action, e.pipelineId, e.runId ?? null, e.taskId ?? null, e.reason ?? null, e.graphVersion ?? null, JSON.stringify(e.details ?? {}),
      ]);
      return { event: mappers.toDatasetEvent(row) as ExternalDatasetEvent, created: true, audit: toAuditEntry(audit!) };
    });
  }

  // --- operator actions -------------------------------------------------------------------------

  async skipTask(r: TaskActionRequest): Promise<TaskInstanceRecord> {
    return this.#settleByHand(r, "skipped", r.reason);
  }

  async markTask(r: TaskActionRequest & { state: "success" | "failed" }): Promise<TaskInstanceRecord> {
    return this.#settleByHand(r, r.state, r.state === "success" ? null : `marked failed: ${r.reason}`);
  }

  // --- external jobs ---------------------------------------------------------------------------

  async recordExternalJob(job: NewExternalJob): Promise<ExternalJobRecord | null> {
    return this.db.tx(async (tx) => {
      const inserted = await tx.first("insertExternalJob", [job.attemptId, job.workerId, job.key, job.handle, job.adapter, job.link, job.at, job.holdsPool]);
      return inserted ? toExternalJob((await tx.first("selectExternalJob", [inserted.job_id]))!) : null;
    }, { once: true });
  }

  async externalJobOf(runId: string, taskId: string): Promise<{ job: ExternalJobRecord | null; submissions: number }> {
    const row = await this.db.first("selectLiveExternalJob", [runId, taskId]);
    return { job: row && row.job_id !== null ? toExternalJob(row) : null, submissions: Number(row?.submissions ?? 0) };
  }

  async endExternalJob(r: EndExternalJob): Promise<boolean> {
    if (r.by) {
      return (await this.db.idempotent("endExternalJobByAttempt", [r.jobId, r.state, r.at, r.note, r.by.attemptId, r.by.workerId])).rowCount === 1;
    }
    if (r.state !== "cancelled") return false;
    return (await this.db.idempotent("endRequestedExternalJob", [r.jobId, r.state, r.at, r.note])).rowCount === 1;
  }

  async externalJobsToCancel(pipelineIds: readonly string[], limit: number): Promise<ExternalJobRecord[]> {
    return (await this.db.rows("externalJobsToCancel", [pipelineIds, limit])).map(toExternalJob);
  }

  async listExternalJobs(runId: string, taskId?: string): Promise<ExternalJobRecord[]> {
    return (await this.db.rows("listExternalJobs", [runId, taskId ?? null])).map(toExternalJob);
  }

  async #settleByHand(r: TaskActionRequest, state: "success" | "failed" | "skipped", reason: string | null): Promise<TaskInstanceRecord> {
    return this.#announcing(this.db.tx(async (tx) => {
      const run = await tx.first("lockRun", [r.runId]);
      const ti = run ? await tx.first("lockTaskInstance", [r.runId, r.taskId]) : undefined;
      const refusal = settleByHandRefusal(r.runId, r.taskId, { run: Boolean(run), taskState: ti?.state ?? null });
      if (refusal !== null || !run) throw new StoreConflictError(refusal ?? `no run ${r.runId}`);
      await this.#settleOneByHand(tx, run, r, ti!.state as TaskState, state, reason);
      return toTaskInstance((await tx.first("selectTaskInstance", [r.runId, r.taskId]))!);
    }, { once: true }));
  }

  /** One task instance settled by hand, inside the caller's transaction (run and instance locked, refusals checked). */
  async #settleOneByHand(tx: Tx, run: Row, r: TaskActionRequest, before: TaskState, state: "success" | "failed" | "skipped", reason: string | null): Promise<void> {
    void tx.send("settleByHand", [r.runId, r.taskId, state, reason, r.at]);
    // Downstream instances settled because of the old state (upstream_failed, or skipped for an
    // upstream skip) wait again, and are settled afresh from the new one.
    const stack = [r.taskId];
    const mapped = parseMappedTaskId(r.taskId);
    const counts = mapped ? await tx.first("mapCounts", [r.runId, mapped.taskId]) : undefined;
    if (mapped && counts && markReopensMappedTask({ state: counts.state as TaskState, mapTotal: counts.map_total === null ? null : Number(counts.map_total) })) {
      void tx.send("mapReopen", [r.runId, mapped.taskId]);
      stack.push(mapped.taskId);
    }
    while (stack.length > 0) {
      for (const c of await tx.rows("lockChildren", [r.runId, run.graph_version, stack.pop()!])) {
        const reopened = reopenedByHand({ state: c.state, reason: c.reason, tryNumber: c.try_number, maxTries: c.max_tries });
        if (!reopened) continue;
        void tx.send("resetTaskInstance", [r.runId, c.task_id, reopened.maxTries, c.trigger_rule, c.pool, c.slots, c.priority]);
        stack.push(c.task_id);
      }
    }
    const progress = new RunProgress();
    progress.settled(r.taskId, state, r.at);
    // Only an instance that held a maxActive place frees one (a held one marked never did).
    const { released } = await this.#mappedInstanceEnded(tx, r.runId, r.taskId, r.at, progress, holdsMaxActivePlace(before));
    const madeEligible = (await this.#decideAll(tx, r.runId, run.graph_version, progress)) || released;
    void tx.send("reopenRun", [r.runId]);
    void tx.send("requestExternalCancels", [r.runId, `settled by hand as ${state}: ${r.reason}`]);
    await this.#finishRunIfDone(tx, r.runId, r.at, madeEligible);
  }

  // --- backfills ------------------------------------------------------------------------------

  async createBackfill(b: NewBackfill): Promise<{ backfill: BackfillRecord; created: boolean }> {
    return this.db.tx(async (tx) => {
      const taskIds = b.taskIds ? JSON.stringify(b.taskIds) : null;
      void tx.send("lockBackfillRequests", [KEYS.backfillRequests(this.schema, b.pipelineId)]);
      const same = await tx.first("selectSameLiveBackfill", [b.pipelineId, b.fromDate, b.toDate, b.reprocess, taskIds ?? ""]);
      if (same) return { backfill: toBackfill(same), created: false };
      void tx.send("insertBackfill", [
        b.backfillId, b.pipelineId, b.fromDate, b.toDate, b.reprocess, b.maxActiveRuns, b.backwards, taskIds,
        b.actor, b.reason, b.graphVersion, JSON.stringify(b.estimate), b.at, b.codeChoice ?? "latest",
      ]);
      if (b.items.length > 0) {
        void tx.send("insertBackfillItems", [
          b.backfillId,
          b.items.map((_, seq) => seq),
          b.items.map((i) => i.businessDate),
          b.items.map((i) => i.intervalStart),
          b.items.map((i) => i.intervalEnd),
          b.items.map((i) => i.action),
          b.items.map((i) => i.why),
          b.items.map((i) => i.runId),
        ]);
      }
      return { backfill: toBackfill((await tx.first("selectBackfill", [b.backfillId]))!), created: true };
    });
  }

  async markBackfillItemStarted(backfillId: string, seq: number): Promise<void> {
    await this.db.idempotent("markBackfillItemStarted", [backfillId, seq]);
  }

  async setBackfillState(backfillId: string, state: BackfillState, at: number): Promise<BackfillRecord> {
    const row = (await this.db.idempotent("setBackfillState", [backfillId, state, at])).rows[0];
    if (!row) throw new StoreConflictError(`no backfill ${backfillId}`);
    return toBackfill(row);
  }

  async cancelBackfill(backfillId: string, reason: string, at: number): Promise<BackfillRecord> {
    return this.db.tx(async (tx) => {
      const backfill = await tx.first("setBackfillState", [backfillId, "cancelled", at]);
      if (!backfill) throw new StoreConflictError(`no backfill ${backfillId}`);
      for (const { run_id } of await tx.rows("selectLiveRunsOfBackfill", [backfillId])) {
        void tx.send("lockRun", [run_id]);
        void tx.send("skipWaitingOfRun", [run_id, reason, at]);
        void tx.send("requestExternalCancels", [run_id, `backfill cancelled: ${reason}`]);
        // A cancelled run is not a success, whatever its remaining tasks say.
        if (!(await tx.first("runProgress", [run_id]))!.live) void tx.send("finishRun", [run_id, "failed", at]);
      }
      return toBackfill(backfill);
    });
  }

  // --- freshness, incidents, alerts -------------------------------------------------------------

  async openIncident(i: NewIncident): Promise<boolean> {
    return this.db.tx(async (tx) => {
      const closed = i.closed === undefined ? [null, null, null] : [i.at, SYSTEM_ACTOR, i.closed];
      const opened = await tx.first("insertIncident", [
        i.key, i.kind, i.dataset, i.pipelineId, i.businessDate, i.runId, i.message, JSON.stringify(i.notify), i.at, ...closed,
      ]);
      if (opened) this.#queueAlerts(tx, toIncident(opened), "open", i.at);
      if (opened) void tx.send("insertAudit", auditParams(incidentAudit(i, { action: "incident-open", reason: i.message, at: i.at })));
      if (opened && i.closed !== undefined) void tx.send("insertAudit", auditParams(incidentAudit(i, { action: "incident-resolve", reason: i.closed, at: i.at })));
      return opened !== undefined;
    });
  }

  async resolveIncident(key: string, at: number, resolution: string): Promise<boolean> {
    return this.db.tx(async (tx) => {
      const resolved = await tx.first("resolveIncident", [key, at, SYSTEM_ACTOR, resolution]);
      if (resolved) {
        const incident = toIncident(resolved);
        this.#queueAlerts(tx, incident, "resolve", at);
        void tx.send("insertAudit", auditParams(incidentAudit(incident, { action: "incident-resolve", reason: resolution, at })));
      }
      return resolved !== undefined;
    });
  }

  async actOnIncident(request: IncidentActionRequest): Promise<{ incident: Incident; audit: AuditEntry }> {
    return this.db.tx(async (tx) => {
      const row = await tx.first("selectIncidentForUpdate", [request.key]);
      if (!row) throw new StoreConflictError(`no incident ${request.key}`);
      const decision = decideIncidentAction(request.key, toIncident(row), request, request.at);
      if (decision.refusal !== undefined) throw new StoreConflictError(decision.refusal);
      let incident: Incident;
      if (decision.resolved) {
        incident = toIncident((await tx.first("resolveIncident", [request.key, decision.resolved.at, decision.resolved.by, decision.resolved.resolution]))!);
        this.#queueAlerts(tx, incident, "resolve", request.at);
      } else {
        const ack = decision.acknowledgement;
        incident = toIncident((await tx.first("acknowledgeIncident", [request.key, ack.at, ack.by, ack.reason, ack.until]))!);
      }
      const audit = await tx.first("insertAudit", auditParams(incidentAudit(incident, {
        action: auditActionOf(request), actor: request.actor, reason: request.reason.trim(), at: request.at,
        until: request.kind === "acknowledge" ? request.until : null,
      })));
      return { incident, audit: toAuditEntry(audit!) };
    });
  }

  async reopenIncident(key: string, at: number): Promise<boolean> {
    return this.db.tx(async (tx) => {
      const row = await tx.first("selectIncidentForUpdate", [key]);
      if (!row || !reopenDue(toIncident(row), at)) return false;
      const incident = toIncident((await tx.first("markIncidentReopened", [key, Number(row.acknowledged_at)]))!);
      this.#queueAlerts(tx, incident, "reopen", at, Number(row.ack_until));
      return true;
    });
  }

  /**
   * Queues one alert per notifier the incident names (once per event and occasion: the outbox is
   * unique on them; a reopen's occasion is the end of the snooze it tells).
   */
  #queueAlerts(tx: Tx, incident: Incident, event: AlertEvent, at: number, occasion = 0): void {
    if (incident.notify.length === 0) return;
    void tx.send("insertAlerts", [incident.key, event, [...incident.notify], JSON.stringify({ event, ...incident }), at, occasion]);
  }

  async recordAlertDelivery(id: number, result: { at: number; error?: string; nextAttemptAt?: number }): Promise<void> {
    if (result.error === undefined) await this.db.write("alertDelivered", [id, result.at]);
    else await this.db.write("alertFailed", [id, result.error, result.nextAttemptAt ?? result.at]);
  }

  // --- watermarks -------------------------------------------------------------------------------

  async saveWatermark(pipelineId: string, taskId: string, value: string | number, at: number): Promise<void> {
    await this.db.idempotent("upsertWatermark", [pipelineId, taskId, String(value), typeof value === "number" ? "number" : "text", at]);
  }

  // --- API tokens -------------------------------------------------------------------------------

  async createToken(token: NewApiToken): Promise<ApiTokenRecord> {
    const inserted = await this.db.write("insertToken", [token.tokenHash, token.name, token.role, token.at, token.createdBy]);
    if (inserted.rows.length === 0) throw new StoreConflictError(`a token named "${token.name}" exists; revoke it first`);
    return toApiToken(inserted.rows[0]!);
  }

  async revokeToken(request: { name: string; by: string; at: number }): Promise<ApiTokenRecord | null> {
    const row = (await this.db.write("revokeToken", [request.at, request.by, request.name])).rows[0];
    return row ? toApiToken(row) : null;
  }

  // --- the change feed --------------------------------------------------------------------------

  async watchChanges(onChange: () => void): Promise<() => Promise<void>> {
    return this.#listen("changes", KEYS.changes(this.schema), onChange);
  }

  /** A LISTEN connection of its own on `channel`, named `<application>:<purpose>` for pg_stat_activity. */
  async #listen(purpose: string, channel: string, onNotify: () => void): Promise<() => Promise<void>> {
    const listener = new WorkListener(clientConfig(this.#target, `${this.#applicationName}:${purpose}`), channel, onNotify, this.#log);
    this.#listeners.add(listener);
    await listener.start();
    return async () => {
      this.#listeners.delete(listener);
      await listener.stop();
    };
  }

  // --- pages of history -------------------------------------------------------------------------

  async noteRestateRefusal(r: { runId: string; headStart: number; note: string }): Promise<boolean> {
    return (await this.db.first("noteRestateRefusal", [r.runId, r.note, r.headStart])) !== undefined;
  }

  async setWatermarkByHand(request: { pipelineId: string; taskId: string; value: string | number; at: number }): Promise<{ set: true; previous: string | number | null } | { set: false; liveRunId: string }> {
    const { pipelineId, taskId, value, at } = request;
    return this.db.tx(async (tx) => {
      const owner = (await tx.send("selectWatermarkOwner", [taskId, pipelineId])).rows[0];
      if (owner) return { set: false as const, liveRunId: owner.run_id as string };
      const row = (await tx.send("selectWatermark", [pipelineId, taskId])).rows[0];
      await tx.send("upsertWatermark", [pipelineId, taskId, String(value), typeof value === "number" ? "number" : "text", at]);
      return { set: true as const, previous: row ? watermarkValue(row) : null };
    });
  }

  async recordedFrozenPeriods(scope: string): Promise<RecordedFrozenPeriods | null> {
    const row = await this.db.first("selectRecordedFrozen", [scope]);
    return row ? { scope: row.scope, periods: row.periods, graphVersion: row.graph_version, recordedAt: Number(row.recorded_at) } : null;
  }

  /** Safe to run again after a broken connection: a second try finds the periods switched and writes nothing. */
  async recordFrozenPeriods(r: RecordFrozenPeriods): Promise<AuditEntry | null> {
    return this.db.tx(async (tx) => {
      const switched = await tx.send("switchRecordedFrozen", [r.scope, r.periods, r.graphVersion, r.at, r.expected]);
      if (switched.rowCount === 0) return null;
      const e = r.audit;
      const inserted = await tx.first("insertAudit", [
        e.at, e.actor, e.action, e.pipelineId, e.runId ?? null, e.taskId ?? null, e.reason ?? null, e.graphVersion ?? null, JSON.stringify(e.details ?? {}),
      ]);
      return toAuditEntry(inserted!);
    });
  }

  // --- the scheduler's wake-ups ---------------------------------------------------------------

  /** Notified by triggers (migration 16) in the transactions that end a run, publish, or change a backfill or a pause. */
  async watchScheduling(onWake: () => void): Promise<() => Promise<void>> {
    return this.#listen("scheduling", KEYS.scheduling(this.schema), onWake);
  }
  // --- a worker's own path ----------------------------------------------------------------------

  async renewLeases(workerId: string, attemptIds: readonly number[], leaseExpiresAt: number): Promise<number[]> {
    if (attemptIds.length === 0) return [];
    const { rows } = await this.db.idempotent("renewLeases", [leaseExpiresAt, attemptIds, workerId]);
    return rows.map((r) => Number(r.attempt_id));
  }

  /**
   * The finishes and the claim in one transaction: the finishes' reads, then their writes sent
   * ahead of the claim's candidates (which therefore see them), then the starts with COMMIT: three
   * round trips and one commit where a finish and a claim apart took four and two. Finishes
   * recorded alone elsewhere (a reschedule, datasets, publishes) go first, each as it would on
   * its own. The finishes' NOTIFY goes out only when the claim may have left work for others.
   */
  async finishAndClaim(request: FinishAndClaim): Promise<FinishedAndClaimed> {
    const { finishes, claim } = request;
    for (const f of finishes) assertSummaryFits(f.summary);
    return this.#announcing(this.db.tx(async (tx) => {
      let workMade = false;
      const announce = () => void (workMade = true);
      const outcomes: FinishOutcome[] = new Array(finishes.length);
      const grouped: number[] = [];
      for (const [i, f] of finishes.entries()) {
        if (recordedAlone(f)) outcomes[i] = await this.#finishOneIn(tx, f, announce);
        else grouped.push(i);
      }
      const recorded = grouped.length > 0 ? await this.#recordFinishes(tx, grouped.map((i) => finishes[i]!), announce) : null;
      const claimed = claim ? await this.#claimIn(tx, claim) : null;
      const scoped = !!(claim?.runId || claim?.backfillId);
      if (workMade && othersMayFindWork({ wanted: claim?.limit ?? 0, claimed: claimed?.taken ?? 0, scoped })) {
        this.#notify(tx, claim?.workerId ?? finishes[0]!.workerId);
      }
      return new AfterCommit(async () => {
        const together = recorded ? await recorded.result() : [];
        grouped.forEach((at, i) => (outcomes[at] = together[i]!));
        return { outcomes, claimed: claimed ? await claimed.attempts : [] };
      });
    }, { once: true })); // a claim that may have happened is left to expire, not doubled
  }
}

/** Finishes that write more than an attempt's end (or that need the row first) go one by one, not in a group. */
function recordedAlone(f: AttemptFinish): boolean {
  return f.outcome === "rescheduled" || !!f.datasets?.length || !!f.publishes?.length || f.map !== undefined;
}

const { toAuditEntry, toPipelineState, toLeadership, toIncident, toBackfill, toRun, toTaskInstance, toApiToken, toClaimedAttempt } = mappers;

/** An audit entry as the insert statement binds it. */
function auditParams(e: NewAuditEntry): unknown[] {
  return [e.at, e.actor, e.action, e.pipelineId, e.runId ?? null, e.taskId ?? null, e.reason ?? null, e.graphVersion ?? null, JSON.stringify(e.details ?? {})];
}
