import { ErrorClass } from "../../core/model/error-classes.ts";
import { MAP_COUNT_COLUMNS, MAP_COUNT_SELECT } from "../map-count-sql.ts";
/**
 * What core's claim plan needs of a candidate (background work, backfills and restatements, is
 * served after live runs), and what the claimed attempt carries of its run and task instance:
 * the run is joined already, so a claim reads nothing more per attempt (a claim of 30 often takes
 * the first task of 30 runs).
 */
const CANDIDATE = `t.run_id, t.task_id, t.state, t.try_number, t.max_tries, t.pool, t.slots, t.priority, t.started_at, r.pipeline_id,
    (r.backfill_id IS NOT NULL OR r.trigger_kind = 'restate') AS background, r.state AS run_state, r.interval_start, r.interval_end,
    r.business_date, r.graph_version, r.params, r.trigger_kind, r.backfill_id, r.code_version, t.map_key, t.map_item`;

/**
 * Every SQL statement of the SQLite adapter, in one place. Each is prepared once.
 *
 * A LIMIT is always written `LIMIT +?`, never `LIMIT ?`: SQLite's planner reads a bare bound
 * LIMIT's value, and a statement whose plan read a bound value is compiled again every time that
 * parameter is bound (better-sqlite3 binds on every call). A claim's two candidate reads were
 * compiled afresh on each claim: 50-100 us each, more than the rows they read. The plans do not
 * depend on the value (test/store/sqlite-store.test.ts and history-plans.test.ts check them).
 */
export const SQL = {
  insertPipelineVersion: `
    INSERT INTO pipeline_versions (pipeline_id, version, definition, created_at)
    VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  insertEdge: `INSERT INTO task_edges (graph_version, parent, child) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
  selectPipelineVersion: `SELECT * FROM pipeline_versions WHERE pipeline_id = ? AND version = ?`,

  insertCodeVersion: `
    INSERT INTO code_versions (pipeline_id, code_version, graph_version, file, location, packages, created_at, created_by)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (pipeline_id, code_version) DO UPDATE SET collected_at = NULL WHERE code_versions.collected_at IS NOT NULL`,
  selectCodeVersion: `SELECT * FROM code_versions WHERE pipeline_id = ? AND code_version = ?`,

  selectCodeVersionForCollection: `SELECT collected_at FROM code_versions WHERE pipeline_id = ? AND code_version = ?`,
  selectCodeVersionForRun: `SELECT collected_at FROM code_versions WHERE pipeline_id = ? AND code_version = ?`,
  selectCodeVersionNeeded: `
    SELECT 1 AS needed FROM runs WHERE pipeline_id = ? AND code_version = ?
      AND (state IN ('queued', 'running') OR created_at >= ? OR ended_at >= ?) LIMIT 1`,
  markCodeVersionCollected: `UPDATE code_versions SET collected_at = ? WHERE pipeline_id = ? AND code_version = ?`,

  selectCodeVersionUses: `
    SELECT v.*, count(r.run_id) AS runs, min(r.started_at) AS first_ran_at, min(r.business_date) AS first_date, max(r.business_date) AS last_date
    FROM code_versions v LEFT JOIN runs r ON r.pipeline_id = v.pipeline_id AND r.code_version = v.code_version
    WHERE v.pipeline_id = ? GROUP BY v.pipeline_id, v.code_version ORDER BY v.created_at, v.code_version`,
  insertRun: `
    INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind,
                      triggered_by, reason, graph_version, params, created_at, backfill_id, code_version)
    VALUES (@runId, @pipelineId, @intervalStart, @intervalEnd, @businessDate, 'queued', @trigger,
            @triggeredBy, @reason, @graphVersion, @params, @createdAt, @backfillId, @codeVersion)
    ON CONFLICT DO NOTHING`,
  selectRun: `SELECT * FROM runs WHERE run_id = ?`,
  selectRunByInterval: `SELECT * FROM runs WHERE pipeline_id = ? AND interval_start = ? AND interval_end = ?`,
  selectRunsOfPipeline: `SELECT * FROM runs WHERE pipeline_id = ? ORDER BY interval_start DESC LIMIT +?`,
  selectRuns: `SELECT * FROM runs ORDER BY created_at DESC LIMIT +?`,
  markRunRunning: `UPDATE runs SET state = 'running', started_at = coalesce(started_at, ?) WHERE run_id = ? AND state = 'queued'`,
  finishRun: `UPDATE runs SET state = ?, ended_at = ? WHERE run_id = ?`,
  requeueRun: `
    UPDATE runs SET state = 'queued', ended_at = NULL, started_at = NULL, graph_version = ?, params = ?
    WHERE run_id = ?`,
  repinRun: `UPDATE runs SET code_version = ?, graph_version = ? WHERE run_id = ?`,
  reopenRun: `
    UPDATE runs SET state = CASE WHEN state IN ('success', 'failed') THEN 'queued' ELSE state END, ended_at = NULL
    WHERE run_id = ?`,

  insertTaskInstance: `
    INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, pool, slots, priority, queued_at)
    VALUES (@runId, @taskId, @state, @maxTries, @triggerRule, @pool, @slots, @priority, @queuedAt)`,
  selectTaskInstances: `SELECT * FROM task_instances WHERE run_id = ? ORDER BY started_at IS NULL, started_at, task_id`,
  selectTaskInstance: `SELECT * FROM task_instances WHERE run_id = ? AND task_id = ?`,
  deleteTaskInstance: `DELETE FROM task_instances WHERE run_id = ? AND task_id = ?`,
  resetTaskInstance: `
    UPDATE task_instances
    SET state = 'scheduled', max_tries = try_number + @maxTries, next_try_at = NULL, reason = NULL,
        trigger_rule = @triggerRule, pool = @pool, slots = @slots, priority = @priority,
        current_attempt_id = NULL, queued_at = NULL, started_at = NULL, ended_at = NULL,
        map_live = NULL, map_failing = NULL, map_total = NULL, map_held_at = NULL,
        map_in_scheduled = NULL, map_in_queued = NULL, map_in_running = NULL, map_in_success = NULL, map_in_failed = NULL, map_in_up_for_retry = NULL, map_in_up_for_reschedule = NULL, map_in_skipped = NULL, map_in_upstream_failed = NULL, map_in_removed = NULL
    WHERE run_id = @runId AND task_id = @taskId`,

  startTaskInstance: `
    UPDATE task_instances
    SET state = 'running', try_number = ?, current_attempt_id = ?, next_try_at = NULL,
        started_at = coalesce(started_at, ?)
    WHERE run_id = ? AND task_id = ?`,
  insertAttempt: `
    INSERT INTO attempts (run_id, task_id, try_number, state, worker_id, pid, started_at, lease_expires_at, log_path)
    VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)`,
  renewLease: `
    UPDATE attempts SET lease_expires_at = ? WHERE attempt_id = ? AND worker_id = ? AND state = 'running'`,

  selectAttemptForFinish: `
    SELECT a.run_id, a.task_id, a.state, a.worker_id, a.lease_expires_at, t.state AS ti_state, t.current_attempt_id,
           t.try_number, t.max_tries, r.graph_version, r.business_date, r.pipeline_id, r.trigger_kind
    FROM attempts a
    JOIN task_instances t ON t.run_id = a.run_id AND t.task_id = a.task_id
    JOIN runs r ON r.run_id = a.run_id
    WHERE a.attempt_id = ?`,
  /**
   * The finish is its own fence: it ends the attempt only if it is still running, is this
   * worker's, and is the one its task instance runs (a lost lease, a rerun or a newer try leave
   * it behind). The start (null: keep the claim's) is the start after a wait in the worker's
   * queue. No RETURNING: SQLite runs RETURNING as a trigger, and any trigger on an UPDATE made it
   * dearer than the read after it (selectFinishedAttempt), measured.
   */
  finishAttempt: `
    UPDATE attempts
    SET state = ?, ended_at = ?, exit_code = ?, error_class = ?, error_message = ?, summary = ?, lease_expires_at = NULL,
        started_at = coalesce(?, started_at)
    WHERE attempt_id = ? AND worker_id = ? AND state = 'running'
      AND EXISTS (SELECT 1 FROM task_instances t
                  WHERE t.run_id = attempts.run_id AND t.task_id = attempts.task_id AND t.state = 'running'
                    AND t.current_attempt_id = attempts.attempt_id)`,
  /** What ending the try needs, once the finish was accepted. */
  selectFinishedAttempt: `
    SELECT a.run_id, a.task_id, t.try_number, t.max_tries, r.graph_version, r.business_date, r.pipeline_id, r.trigger_kind
    FROM attempts a
    JOIN task_instances t ON t.run_id = a.run_id AND t.task_id = a.task_id
    JOIN runs r ON r.run_id = a.run_id
    WHERE a.attempt_id = ?`,
  setTaskState: `
    UPDATE task_instances SET state = ?, next_try_at = ?, reason = ?, ended_at = ? WHERE run_id = ? AND task_id = ?`,
  queueTaskInstance: `
    UPDATE task_instances SET state = 'queued', queued_at = ? WHERE run_id = ? AND task_id = ? AND state = 'scheduled'`,
  settleTaskInstance: `
    UPDATE task_instances SET state = ?, reason = ?, ended_at = ? WHERE run_id = ? AND task_id = ? AND state = 'scheduled'`,
  /**
   * The waiting children of a task, each with all its parents' states (core's RunProgress reads
   * these). CROSS JOIN keeps SQLite's join order: left to choose, it started from every edge of
   * the graph version, O(edges) per finish.
   */
  waitingChildrenWithParents: `
    SELECT w.task_id, w.trigger_rule, e.parent AS upstream, u.state AS upstream_state
    FROM task_edges c
    CROSS JOIN task_instances w ON w.run_id = @runId AND w.task_id = c.child AND w.state = 'scheduled' AND w.map_total IS NULL
    CROSS JOIN task_edges e ON e.graph_version = c.graph_version AND e.child = c.child
    CROSS JOIN task_instances u ON u.run_id = @runId AND u.task_id = e.parent
    WHERE c.graph_version = @graphVersion AND c.parent = @parent
    ORDER BY w.task_id`,
  /** Rerun: the reset tasks that wait, each with all its parents' states. */
  waitingTasksWithParents: `
    SELECT w.task_id, w.trigger_rule, e.parent AS upstream, u.state AS upstream_state
    FROM task_instances w
    LEFT JOIN task_edges e ON e.graph_version = @graphVersion AND e.child = w.task_id
    LEFT JOIN task_instances u ON u.run_id = @runId AND u.task_id = e.parent
    WHERE w.run_id = @runId AND w.task_id IN (SELECT value FROM json_each(@taskIds)) AND w.state = 'scheduled'`,
  /** A manual settle: the task instances downstream of one task. */
  childInstances: `
    SELECT t.* FROM task_edges c CROSS JOIN task_instances t ON t.run_id = ? AND t.task_id = c.child
    WHERE c.graph_version = ? AND c.parent = ? ORDER BY t.task_id`,
  /** Kept by triggers in every transaction that changes a task instance's state (migration 17): O(1). */
  runProgress: `SELECT live_tasks > 0 AS live, failed_tasks > 0 AS failed FROM runs WHERE run_id = @runId`,
  nextRetryAt: `
    SELECT min(next_try_at) AS at FROM task_instances
    WHERE run_id = ? AND state IN ('up_for_retry', 'up_for_reschedule')`,

  /**
   * Fan-out (migration 26). A list arrives as JSON arrays of [key, position, item, state] in
   * chunks: one statement per chunk, never one per item. Instances take their tries, pool,
   * slots and priority from their mapped task's row.
   */
  mapExistingKeys: `SELECT map_key, state FROM task_instances WHERE run_id = ? AND map_task = ?`,
  /**
   * An operator's selector (core's keyLookup): one key, or the range of a glob's literal prefix,
   * over the unique index of (run, task, key), so a clear or mark by key reads the keys it may
   * name, not every instance of the task.
   */
  mapInstanceOfKey: `SELECT map_key, state FROM task_instances WHERE run_id = ? AND map_task = ? AND map_key = ?`,
  mapInstancesInRange: `
    SELECT map_key, state FROM task_instances WHERE run_id = ? AND map_task = ? AND map_key >= ? AND map_key < ?`,
  mapInstancesFrom: `SELECT map_key, state FROM task_instances WHERE run_id = ? AND map_task = ? AND map_key >= ?`,
  /** A mapped task waits again for its instances; its counts are the trigger's, kept on every instance's change. */
  mapReopen: `
    UPDATE task_instances SET state = 'scheduled', reason = NULL, ended_at = NULL
    WHERE run_id = ? AND task_id = ? AND map_total IS NOT NULL`,
  mapInsert: `
    INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, pool, slots, priority, queued_at,
                                map_task, map_key, map_position, map_item, map_parent)
    SELECT t.run_id, t.task_id || '[' || json_extract(j.value, '$[0]') || ']', json_extract(j.value, '$[3]'),
           @tries, t.trigger_rule, t.pool, t.slots, t.priority,
           CASE WHEN json_extract(j.value, '$[3]') = 'queued' THEN @at END,
           t.task_id, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'),
           CASE WHEN @parent IS NOT NULL THEN @parent || '[' || json_extract(j.value, '$[0]') || ']' END
    FROM task_instances t, json_each(@rows) j
    WHERE t.run_id = @runId AND t.task_id = @taskId`,
  mapResetKept: `
    UPDATE task_instances AS i
    SET state = json_extract(j.value, '$[3]'), map_position = json_extract(j.value, '$[1]'), map_item = json_extract(j.value, '$[2]'),
        max_tries = i.try_number + @tries, next_try_at = NULL, reason = NULL, current_attempt_id = NULL,
        queued_at = CASE WHEN json_extract(j.value, '$[3]') = 'queued' THEN @at END, started_at = NULL, ended_at = NULL,
        map_held_at = NULL
    FROM json_each(@rows) j
    WHERE i.run_id = @runId AND i.map_task = @taskId AND i.map_key = json_extract(j.value, '$[0]')`,
  mapRemove: `
    UPDATE task_instances SET state = 'removed', reason = @reason, next_try_at = NULL, ended_at = @at
    WHERE run_id = @runId AND map_task = @taskId AND map_key IN (SELECT value FROM json_each(@keys))`,
  /** One pass over the instances: every count the mapped task's row keeps (migrations 26 and 33). */
  mapRecount: `
    UPDATE task_instances SET state = 'scheduled', reason = NULL, ended_at = NULL, map_max_active = @maxActive,
      (${MAP_COUNT_COLUMNS}) = (
        SELECT ${MAP_COUNT_SELECT}
        FROM task_instances m WHERE m.run_id = @runId AND m.map_task = @taskId)
    WHERE run_id = @runId AND task_id = @taskId`,
  /** Instances of a mapped task that hold a maxActive place (held ones wait as 'scheduled'). */
  mapActive: `
    SELECT count(*) AS n FROM task_instances INDEXED BY task_instances_map_active WHERE run_id = ? AND map_task = ?
    AND state IN ('queued', 'running', 'up_for_retry', 'up_for_reschedule') AND map_task IS NOT NULL`,
  mapCounts: `
    SELECT state, try_number, max_tries, map_live, map_failing, map_total, map_max_active FROM task_instances
    WHERE run_id = ? AND task_id = ?`,
  /** A chained task's instances waiting for this instance (its key's upstream), with its state. */
  mapChainedChildren: `
    SELECT w.task_id, w.trigger_rule, u.task_id AS upstream, u.state AS upstream_state
    FROM task_instances w INDEXED BY task_instances_map_waiting
    JOIN task_instances u ON u.run_id = w.run_id AND u.task_id = w.map_parent
    WHERE w.run_id = ? AND w.map_parent = ? AND w.state = 'scheduled' AND w.map_parent IS NOT NULL`,
  /** maxActive: an instance ended, so the first held one (by position) is queued. */
  mapReleaseHeld: `
    UPDATE task_instances SET state = 'queued', queued_at = @at
    WHERE run_id = @runId AND task_id = (
      SELECT task_id FROM task_instances INDEXED BY task_instances_map_held
      WHERE run_id = @runId AND map_task = @taskId AND state = 'scheduled' AND map_task IS NOT NULL
      ORDER BY map_position LIMIT 1)`,
  /**
   * maxActive over a task mapped by key (migration 34): a chained instance made eligible while
   * its mapped task has no free place waits, held (still 'scheduled', map_held_at set), and the
   * first held one by position is queued as an active one ends.
   */
  mapHold: `UPDATE task_instances SET map_held_at = ? WHERE run_id = ? AND task_id = ? AND state = 'scheduled'`,
  mapReleaseReady: `
    UPDATE task_instances SET state = 'queued', queued_at = @at, map_held_at = NULL
    WHERE run_id = @runId AND task_id = (
      SELECT task_id FROM task_instances INDEXED BY task_instances_map_ready
      WHERE run_id = @runId AND map_task = @taskId AND state = 'scheduled' AND map_held_at IS NOT NULL
      ORDER BY map_position LIMIT 1)`,
  mapParentOf: `SELECT map_parent FROM task_instances WHERE run_id = ? AND task_id = ?`,
  mapSettle: `
    UPDATE task_instances SET state = @state, reason = @reason, ended_at = @at
    WHERE run_id = @runId AND task_id = @taskId AND state = 'scheduled'`,
  pageMappedInstances: `
    SELECT i.task_id, i.map_key, i.map_position, i.map_item, i.state, i.try_number, i.reason, i.started_at, i.ended_at,
           (SELECT a.summary FROM attempts a WHERE a.run_id = i.run_id AND a.task_id = i.task_id AND a.state = 'success'
            ORDER BY a.try_number DESC LIMIT 1) AS summary
    FROM task_instances i
    WHERE i.run_id = @runId AND i.map_task = @taskId AND i.map_key > @after
      AND (@prefix IS NULL OR substr(i.map_key, 1, length(@prefix)) = @prefix)
      AND (@states IS NULL OR i.state IN (SELECT value FROM json_each(@states)))
    ORDER BY i.map_key
    LIMIT +@limit`,

  selectAttempts: `SELECT * FROM attempts WHERE run_id = ? ORDER BY attempt_id`,
  selectAttemptsOfTask: `SELECT * FROM attempts WHERE run_id = ? AND task_id = ? ORDER BY attempt_id`,

  insertAudit: `
    INSERT INTO audit_log (at, actor, action, pipeline_id, run_id, task_id, reason, graph_version, details)
    VALUES (@at, @actor, @action, @pipelineId, @runId, @taskId, @reason, @graphVersion, @details)
    RETURNING *`,
  selectAudit: `SELECT * FROM audit_log ORDER BY id DESC LIMIT +?`,
  selectAuditOfPipeline: `SELECT * FROM audit_log WHERE pipeline_id = ? ORDER BY id DESC LIMIT +?`,

  // --- scheduling ---
  insertPipelineState: `INSERT INTO pipelines (pipeline_id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING`,
  selectPipelineState: `SELECT * FROM pipelines WHERE pipeline_id = ?`,
  setPaused: `UPDATE pipelines SET paused = ?, paused_note = ?, paused_by = ?, paused_at = ? WHERE pipeline_id = ?`,
  advanceCursor: `
    UPDATE pipelines SET schedule_cursor = max(coalesce(schedule_cursor, ?), ?) WHERE pipeline_id = ?`,
  countLiveRuns: `SELECT count(*) AS n FROM runs WHERE pipeline_id = ? AND state IN ('queued', 'running')`,
  insertSkippedInterval: `
    INSERT INTO skipped_intervals (pipeline_id, interval_start, interval_end, business_date, reason, at)
    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  selectRunsInRange: `
    SELECT * FROM runs WHERE pipeline_id = ? AND interval_start >= ? AND interval_start < ? ORDER BY interval_start`,
  selectSkippedInRange: `
    SELECT * FROM skipped_intervals WHERE pipeline_id = ? AND interval_start >= ? AND interval_start < ?
    ORDER BY interval_start`,

  // --- claiming under limits ---
  /**
   * Both read their partial index (task_instances_queued, task_instances_waiting) in the order
   * they return and stop at LIMIT: the ordering key is on the task instance itself
   * (from_backfill, kept by triggers, migration 16). With a column of the joined run first in
   * ORDER BY, SQLite joined every queued row and sorted them all in a temporary B-tree, 11-22 ms
   * per claim with 20,000 queued.
   */
  selectQueuedCandidates: `
    SELECT ${CANDIDATE}, t.queued_at AS waited_since, 0 AS due
    FROM task_instances t JOIN runs r ON r.run_id = t.run_id
    WHERE t.state = 'queued'
    ORDER BY t.from_backfill, t.priority DESC, t.queued_at, t.task_id
    LIMIT +?`,
  selectWaitingCandidates: `
    SELECT ${CANDIDATE}, t.next_try_at AS waited_since, 1 AS due
    FROM task_instances t JOIN runs r ON r.run_id = t.run_id
    WHERE t.state IN ('up_for_retry', 'up_for_reschedule') AND t.next_try_at <= ?
    ORDER BY t.from_backfill, t.next_try_at
    LIMIT +?`,
  /**
   * One run's queued rows and its due retries, each read from its partial index in order and
   * cut at LIMIT, then merged: O(what is claimed), not O(the run). `due` is 0 for both (a claim
   * scoped to one run orders by priority and age alone).
   */
  selectRunCandidates: `
    SELECT * FROM (
      SELECT * FROM (
        SELECT ${CANDIDATE}, t.queued_at AS waited_since, 0 AS due
        FROM task_instances t INDEXED BY task_instances_queued_by_run CROSS JOIN runs r ON r.run_id = t.run_id
        WHERE t.run_id = @runId AND t.state = 'queued'
        ORDER BY t.priority DESC, t.queued_at, t.task_id
        LIMIT +@limit
      )
      UNION ALL
      SELECT * FROM (
        SELECT ${CANDIDATE}, t.queued_at AS waited_since, 0 AS due
        FROM task_instances t INDEXED BY task_instances_waiting_by_run CROSS JOIN runs r ON r.run_id = t.run_id
        WHERE t.run_id = @runId AND t.state IN ('up_for_retry', 'up_for_reschedule') AND t.next_try_at <= @now
        ORDER BY t.next_try_at
        LIMIT +@limit
      )
    )
    ORDER BY priority DESC, waited_since, task_id
    LIMIT +@limit`,
  selectBackfillCandidates: `
    SELECT ${CANDIDATE}, t.queued_at AS waited_since, 0 AS due
    FROM task_instances t JOIN runs r ON r.run_id = t.run_id
    WHERE r.backfill_id = ? AND r.state IN ('queued', 'running')
      AND (t.state = 'queued' OR (t.state IN ('up_for_retry', 'up_for_reschedule') AND t.next_try_at <= ?))
    ORDER BY t.priority DESC, t.queued_at, t.task_id
    LIMIT +?`,
  countRunningAll: `SELECT count(*) AS n FROM task_instances WHERE state = 'running'`,
  countRunningByPipeline: `
    SELECT r.pipeline_id AS pipeline_id, count(*) AS n
    FROM task_instances t JOIN runs r ON r.run_id = t.run_id
    WHERE t.state = 'running' GROUP BY r.pipeline_id`,
  poolsInUse: `
    SELECT pool, sum(slots) AS used FROM task_instances WHERE state = 'running' AND pool IS NOT NULL GROUP BY pool`,
  /** Remote jobs recorded holding slots and still open, with their task instance's state: core's withRemoteHolds decides which count. */
  remotePoolHolders: `
    SELECT j.run_id, j.task_id, j.held_pool AS pool, j.held_slots AS slots, j.state AS job_state, t.state AS task_state
    FROM external_jobs j JOIN task_instances t ON t.run_id = j.run_id AND t.task_id = j.task_id
    WHERE j.state = 'open' AND j.held_slots > 0`,
  selectPools: `SELECT * FROM pools ORDER BY name`,
  selectPoolHolders: `
    SELECT t.pool, t.run_id, t.task_id, t.slots, a.worker_id
    FROM task_instances t LEFT JOIN attempts a ON a.attempt_id = t.current_attempt_id
    WHERE t.state = 'running' AND t.pool IS NOT NULL
    ORDER BY t.pool, t.started_at`,
  upsertPool: `
    INSERT INTO pools (name, slots, description, updated_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (name) DO UPDATE SET slots = excluded.slots, description = excluded.description, updated_at = excluded.updated_at`,
  insertPoolIfAbsent: `INSERT INTO pools (name, slots, description, updated_at) VALUES (?, ?, NULL, ?) ON CONFLICT DO NOTHING`,
  deletePool: `DELETE FROM pools WHERE name = ?`,

  // --- workers, leases, leadership ---
  upsertWorker: `
    INSERT INTO workers (worker_id, host, pid, concurrency, started_at, last_seen) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (worker_id) DO UPDATE SET last_seen = excluded.last_seen, concurrency = excluded.concurrency`,
  deleteWorker: `DELETE FROM workers WHERE worker_id = ?`,
  selectWorkers: `SELECT * FROM workers ORDER BY last_seen DESC`,
  selectExpiredAttempts: `
    SELECT a.attempt_id, a.run_id, a.task_id, a.try_number, a.worker_id, a.lease_expires_at, r.pipeline_id
    FROM attempts a JOIN runs r ON r.run_id = a.run_id
    WHERE a.state = 'running' AND a.lease_expires_at < ?
    ORDER BY a.lease_expires_at LIMIT +?`,
  loseAttempt: `
    UPDATE attempts
    SET state = 'lost', ended_at = ?, error_class = '${ErrorClass.LeaseExpired}', error_message = ?, lease_expires_at = NULL
    WHERE attempt_id = ?`,
  selectLease: `SELECT * FROM leases WHERE role = ?`,
  insertLease: `INSERT INTO leases (role, holder, term, expires_at, renewed_at) VALUES (?, ?, 1, ?, ?)`,
  renewOwnLease: `UPDATE leases SET expires_at = ?, renewed_at = ? WHERE role = ? AND holder = ?`,
  takeOverLease: `UPDATE leases SET holder = ?, term = term + 1, expires_at = ?, renewed_at = ? WHERE role = ?`,
  resignLease: `UPDATE leases SET expires_at = 0 WHERE role = ? AND holder = ?`,

  // --- datasets ---
  insertDatasetEvent: `
    INSERT INTO dataset_events (dataset, business_date, run_id, pipeline_id, task_id, trigger_kind, at)
    VALUES (?, ?, ?, ?, ?, ?, ?)`,
  maxDatasetEventId: `SELECT coalesce(max(id), 0) AS id FROM dataset_events`,
  /** An outside producer's event: nothing when its key is known (the partial unique index of migration 22). */
  insertExternalDatasetEvent: `
    INSERT INTO dataset_events (dataset, business_date, at, source, actor, idempotency_key, summary)
    VALUES (@dataset, @businessDate, @at, @source, @actor, @idempotencyKey, @summary)
    ON CONFLICT (dataset, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING *`,
  selectDatasetEventByKey: `SELECT * FROM dataset_events WHERE dataset = ? AND idempotency_key = ?`,
  selectDatasetEventsAfter: `
    SELECT id, dataset, business_date FROM dataset_events WHERE dataset = ? AND id > ? AND id <= ? ORDER BY id`,
  upsertDatasetWait: `
    INSERT INTO dataset_waits (pipeline_id, business_date, dataset, event_id) VALUES (?, ?, ?, ?)
    ON CONFLICT (pipeline_id, business_date, dataset) DO UPDATE SET event_id = excluded.event_id`,
  setEventCursor: `UPDATE pipelines SET event_cursor = ? WHERE pipeline_id = ?`,
  selectDatasetWaits: `SELECT business_date, dataset FROM dataset_waits WHERE pipeline_id = ? ORDER BY business_date`,
  deleteDatasetWaits: `DELETE FROM dataset_waits WHERE pipeline_id = ? AND business_date = ?`,
  selectDatasetEvents: `SELECT * FROM dataset_events ORDER BY id DESC LIMIT +?`,
  selectDatasetEventsOf: `SELECT * FROM dataset_events WHERE dataset = ? ORDER BY id DESC LIMIT +?`,

  // --- operator actions ---
  settleByHand: `
    UPDATE task_instances SET state = ?, reason = ?, ended_at = ?, next_try_at = NULL WHERE run_id = ? AND task_id = ?`,

  // --- backfills ---
  insertBackfill: `
    INSERT INTO backfills (backfill_id, pipeline_id, state, from_date, to_date, reprocess, max_active_runs, backwards,
                           task_ids, actor, reason, graph_version, estimate, created_at, updated_at, code_choice)
    VALUES (@backfillId, @pipelineId, 'running', @fromDate, @toDate, @reprocess, @maxActiveRuns, @backwards,
            @taskIds, @actor, @reason, @graphVersion, @estimate, @at, @at, @codeChoice)`,
  selectBackfill: `SELECT * FROM backfills WHERE backfill_id = ?`,
  selectSameLiveBackfill: `
    SELECT * FROM backfills
    WHERE pipeline_id = ? AND from_date = ? AND to_date = ? AND reprocess = ? AND coalesce(task_ids, '') = ?
      AND state IN ('running', 'paused')`,
  selectBackfills: `SELECT * FROM backfills ORDER BY created_at DESC LIMIT +?`,
  selectBackfillsOf: `SELECT * FROM backfills WHERE pipeline_id = ? ORDER BY created_at DESC LIMIT +?`,
  selectLiveBackfills: `SELECT * FROM backfills WHERE state IN ('running', 'paused') ORDER BY created_at`,
  insertBackfillItem: `
    INSERT INTO backfill_items (backfill_id, seq, business_date, interval_start, interval_end, action, why, run_id)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  selectBackfillItems: `SELECT * FROM backfill_items WHERE backfill_id = ? ORDER BY seq`,
  selectPendingBackfillItems: `
    SELECT * FROM backfill_items WHERE backfill_id = ? AND started = 0 AND action IN ('create', 'rerun') ORDER BY seq LIMIT +?`,
  markBackfillItemStarted: `UPDATE backfill_items SET started = 1 WHERE backfill_id = ? AND seq = ?`,
  countLiveBackfillRuns: `SELECT count(*) AS n FROM runs WHERE backfill_id = ? AND state IN ('queued', 'running')`,
  backfillRunStates: `
    SELECT r.state AS state, count(*) AS n
    FROM backfill_items i JOIN runs r ON r.run_id = i.run_id AND r.backfill_id = i.backfill_id
    WHERE i.backfill_id = ? AND i.started = 1
    GROUP BY r.state`,
  backfillItemCounts: `
    SELECT sum(action IN ('create', 'rerun')) AS planned,
           sum(action IN ('create', 'rerun') AND started = 0) AS not_started,
           sum(action IN ('leave', 'refuse')) AS untouched
    FROM backfill_items WHERE backfill_id = ?`,
  setBackfillState: `
    UPDATE backfills SET state = ?, updated_at = ?, ended_at = CASE WHEN ? IN ('completed', 'failed', 'cancelled') THEN ? ELSE NULL END
    WHERE backfill_id = ?`,
  selectLiveRunsOfBackfill: `SELECT run_id FROM runs WHERE backfill_id = ? AND state IN ('queued', 'running')`,
  skipWaitingOfRun: `
    UPDATE task_instances SET state = 'skipped', reason = ?, ended_at = ?, next_try_at = NULL
    WHERE run_id = ? AND state IN ('scheduled', 'queued', 'up_for_retry', 'up_for_reschedule')`,
  joinBackfill: `UPDATE runs SET backfill_id = ?, trigger_kind = 'backfill', triggered_by = ?, reason = ? WHERE run_id = ?`,
  /** The latest ended runs by the interval index, newest first, then each mapped task's row by its key. */
  mappedItemCounts: `
    SELECT t.task_id, t.map_total FROM (
      SELECT run_id, interval_start FROM runs WHERE pipeline_id = ? AND state IN ('success', 'failed')
      ORDER BY interval_start DESC LIMIT +?) r
    JOIN task_instances t ON t.run_id = r.run_id AND t.task_id IN (SELECT value FROM json_each(?))
    WHERE t.map_total IS NOT NULL
    ORDER BY r.interval_start DESC, t.task_id`,
  taskDurations: `
    SELECT task_id, ended_at - started_at AS ms FROM (
      SELECT a.task_id, a.started_at, a.ended_at,
             row_number() OVER (PARTITION BY a.task_id ORDER BY a.attempt_id DESC) AS n
      FROM attempts a JOIN runs r ON r.run_id = a.run_id
      WHERE r.pipeline_id = ? AND a.state = 'success' AND a.ended_at IS NOT NULL
    ) WHERE n <= ?`,

  // --- freshness, incidents, alerts ---
  upsertFreshness: `
    INSERT INTO freshness (dataset, business_date, published_at, first_published_at, pipeline_id, run_id, task_id, summary, empty_reason)
    VALUES (@dataset, @businessDate, @at, @at, @pipelineId, @runId, @taskId, @summary, @emptyReason)
    ON CONFLICT (dataset, business_date) DO UPDATE SET
      published_at = excluded.published_at, pipeline_id = excluded.pipeline_id, run_id = excluded.run_id,
      task_id = excluded.task_id, summary = excluded.summary, empty_reason = excluded.empty_reason`,
  insertFreshnessHistory: `
    INSERT INTO freshness_history (dataset, business_date, published_at, run_id, summary, empty_reason, trigger_kind)
    VALUES (@dataset, @businessDate, @at, @runId, @summary, @emptyReason, @trigger)`,
  selectFreshnessRange: `
    SELECT * FROM freshness WHERE dataset = ? AND business_date >= ? AND business_date <= ? ORDER BY business_date`,
  selectFreshnessHistory: `
    SELECT * FROM freshness_history WHERE dataset = ? AND business_date = ? ORDER BY id`,
  insertIncident: `
    INSERT INTO incidents (incident_key, kind, dataset, pipeline_id, business_date, run_id, message, notify, opened_at, resolved_at, resolved_by, resolution)
    VALUES (@key, @kind, @dataset, @pipelineId, @businessDate, @runId, @message, @notify, @at, @resolvedAt, @resolvedBy, @resolution)
    ON CONFLICT DO NOTHING`,
  selectIncident: `SELECT * FROM incidents WHERE incident_key = ?`,
  resolveIncident: `UPDATE incidents SET resolved_at = ?, resolved_by = ?, resolution = ? WHERE incident_key = ? AND resolved_at IS NULL`,
  acknowledgeIncident: `
    UPDATE incidents SET acknowledged_at = @at, acknowledged_by = @by, ack_reason = @reason, ack_until = @until
    WHERE incident_key = @key AND resolved_at IS NULL`,
  // A promise exists since the first recorded graph version that has it (versions are few per pipeline).
  selectPromiseFirstSeen: `
    SELECT MIN(v.created_at) AS first_seen FROM pipeline_versions v, json_each(v.definition, '$.promises') p
    WHERE v.pipeline_id = ? AND json_extract(p.value, '$.dataset') = ?`,
  selectOpenIncidents: `SELECT * FROM incidents WHERE resolved_at IS NULL ORDER BY opened_at DESC LIMIT +?`,
  selectIncidents: `SELECT * FROM incidents ORDER BY opened_at DESC LIMIT +?`,
  insertAlert: `
    INSERT INTO alert_outbox (incident_key, event, notifier, payload, next_attempt_at, occasion) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT DO NOTHING`,
  markIncidentReopened: `UPDATE incidents SET reopened_for = ? WHERE incident_key = ?`,
  selectDueAlerts: `
    SELECT * FROM alert_outbox WHERE delivered_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT +?`,
  alertDelivered: `UPDATE alert_outbox SET delivered_at = ?, tries = tries + 1, last_error = NULL WHERE id = ?`,
  alertFailed: `UPDATE alert_outbox SET tries = tries + 1, last_error = ?, next_attempt_at = ? WHERE id = ?`,
  selectFailedRunsSince: `SELECT * FROM runs WHERE state = 'failed' AND ended_at >= ? ORDER BY ended_at`,

  // --- watermarks ---
  selectWatermark: `SELECT value, kind FROM watermarks WHERE pipeline_id = ? AND task_id = ?`,
  upsertWatermark: `
    INSERT INTO watermarks (pipeline_id, task_id, value, kind, updated_at) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (pipeline_id, task_id) DO UPDATE SET value = excluded.value, kind = excluded.kind, updated_at = excluded.updated_at`,

  // --- API tokens ---
  insertToken: `
    INSERT INTO api_tokens (token_hash, name, role, created_at, created_by) VALUES (@tokenHash, @name, @role, @at, @createdBy)
    ON CONFLICT DO NOTHING RETURNING *`,
  selectLiveToken: `SELECT * FROM api_tokens WHERE token_hash = ? AND revoked_at IS NULL`,
  selectLiveTokens: `SELECT * FROM api_tokens WHERE revoked_at IS NULL ORDER BY name`,
  selectAllTokens: `SELECT * FROM api_tokens ORDER BY revoked_at IS NOT NULL, name, revoked_at DESC`,
  revokeToken: `UPDATE api_tokens SET revoked_at = ?, revoked_by = ? WHERE name = ? AND revoked_at IS NULL RETURNING *`,
  anyLiveToken: `SELECT EXISTS (SELECT 1 FROM api_tokens WHERE revoked_at IS NULL) AS found`,

  // --- the change feed ---
  selectChanges: `
    SELECT e.*, coalesce(r.pipeline_id, i.pipeline_id) AS pipeline_id, coalesce(r.business_date, i.business_date) AS business_date,
           i.kind AS incident_kind, i.dataset
    FROM change_events e
    LEFT JOIN runs r ON r.run_id = e.run_id
    LEFT JOIN incidents i ON i.incident_key = e.incident_key
    WHERE e.id > ? ORDER BY e.id LIMIT +?`,
  changeBounds: `
    SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'change_events'), 0) AS newest,
           (SELECT min(id) FROM change_events) AS oldest`,

  // --- pages of history ---
  pageRuns: `
    SELECT * FROM runs
    WHERE pipeline_id = @pipelineId AND interval_start < @before AND interval_start >= @from
      AND (@states IS NULL OR state IN (SELECT value FROM json_each(@states)))
      AND (@triggers IS NULL OR trigger_kind IN (SELECT value FROM json_each(@triggers)))
    ORDER BY interval_start DESC LIMIT +@limit`,
  // The runs of one code version: its own statement, so the equality can seek runs_by_code_version.
  // Named: with no statistics SQLite rates it no better than runs_by_interval, which walks every
  // newer run of the pipeline to find an old version's.
  pageRunsOfCode: `
    SELECT * FROM runs INDEXED BY runs_by_code_version
    WHERE pipeline_id = @pipelineId AND code_version = @codeVersion AND interval_start < @before AND interval_start >= @from
      AND (@states IS NULL OR state IN (SELECT value FROM json_each(@states)))
      AND (@triggers IS NULL OR trigger_kind IN (SELECT value FROM json_each(@triggers)))
    ORDER BY interval_start DESC LIMIT +@limit`,
  taskInstancesOfRuns: `SELECT * FROM task_instances WHERE run_id IN (SELECT value FROM json_each(?)) ORDER BY run_id, task_id`,
  pageAudit: `
    SELECT * FROM audit_log
    WHERE id < @before AND at >= @from AND at < @to
      AND (@pipelineId IS NULL OR pipeline_id = @pipelineId)
      AND (@actor IS NULL OR actor = @actor)
      AND (@action IS NULL OR action = @action)
    ORDER BY id DESC LIMIT +@limit`,
  pageDatasetEvents: `
    SELECT * FROM dataset_events WHERE id < @before AND (@dataset IS NULL OR dataset = @dataset) ORDER BY id DESC LIMIT +@limit`,
  pageIncidents: `
    SELECT * FROM incidents
    WHERE (opened_at < @beforeAt OR (opened_at = @beforeAt AND incident_key < @beforeKey))
      AND (@open IS NULL OR (resolved_at IS NULL) = @open)
    ORDER BY opened_at DESC, incident_key DESC LIMIT +@limit`,
  selectWatermarks: `SELECT * FROM watermarks WHERE @pipelineId IS NULL OR pipeline_id = @pipelineId ORDER BY pipeline_id, task_id`,

  // --- restatements ---
  markRestated: `
    UPDATE runs SET trigger_kind = 'restate', triggered_by = ?, reason = ?, restate_count = restate_count + 1,
                    restated_at = ?, restate_note = NULL, restate_note_for = NULL
    WHERE run_id = ?`,
  noteRestateRefusal: `UPDATE runs SET restate_note = ?, restate_note_for = ? WHERE run_id = ? AND restate_note_for IS NOT ?`,

  // A live run whose instance of the task has not finished owns the watermark (the runs_live index).
  selectWatermarkOwner: `
    SELECT r.run_id FROM runs r JOIN task_instances ti ON ti.run_id = r.run_id AND ti.task_id = ?
    WHERE r.pipeline_id = ? AND r.state IN ('queued', 'running')
      AND ti.state NOT IN ('success', 'failed', 'skipped', 'upstream_failed')
    ORDER BY r.run_id LIMIT 1`,

  // Frozen periods as last recorded: a compare-and-set, so that of several processes that see the
  // same change, one records it (and its audit entry) and the others find it already recorded.
  selectRecordedFrozen: `SELECT * FROM frozen_periods WHERE scope = ?`,
  switchRecordedFrozen: `
    INSERT INTO frozen_periods (scope, periods, graph_version, recorded_at) VALUES (@scope, @periods, @graphVersion, @at)
    ON CONFLICT (scope) DO UPDATE SET periods = excluded.periods, graph_version = excluded.graph_version, recorded_at = excluded.recorded_at
    WHERE frozen_periods.periods = @expected`,

  // --- alerts sent, a run's audit trail ---
  // Keyset over the outbox's primary key, newest first; the filters are checked on the way.
  pageAlerts: `
    SELECT a.id, a.incident_key, a.event, a.occasion, a.notifier, a.tries, a.next_attempt_at, a.delivered_at, a.last_error,
           i.kind, i.pipeline_id, i.dataset, i.business_date, i.message, i.opened_at, i.resolved_at
    FROM alert_outbox a JOIN incidents i ON i.incident_key = a.incident_key
    WHERE a.id < @before
      AND (@pipelineId IS NULL OR i.pipeline_id = @pipelineId)
      AND (@incidentKey IS NULL OR a.incident_key = @incidentKey)
      AND (@state IS NULL OR (CASE WHEN a.delivered_at IS NOT NULL THEN 'sent' WHEN a.tries > 0 THEN 'failed' ELSE 'queued' END) = @state)
    ORDER BY a.id DESC LIMIT +@limit`,
  auditOfRun: `
    SELECT * FROM audit_log WHERE run_id = @runId AND (@actions IS NULL OR action IN (SELECT value FROM json_each(@actions)))
    ORDER BY id DESC LIMIT +@limit`,
  /** A mapped task is one cell, its own task instance: its instances (up to 100,000 a run) are paged by key instead. */
  taskStatesOfRuns: `
    SELECT run_id, task_id, state, try_number, map_total, map_in_scheduled, map_in_queued, map_in_running, map_in_success, map_in_failed, map_in_up_for_retry, map_in_up_for_reschedule, map_in_skipped, map_in_upstream_failed, map_in_removed
    FROM task_instances WHERE run_id IN (SELECT value FROM json_each(?)) AND map_task IS NULL`,
  /** A run's page: its task instances, a mapped task's as one row with its counts, never its instances. */
  taskRowsOfRun: `SELECT * FROM task_instances WHERE run_id = ? AND map_task IS NULL ORDER BY started_at IS NULL, started_at, task_id`,
  /** CROSS JOIN keeps the order: the run's few task rows first, then each one's attempts by index. */
  attemptsOfTaskRows: `
    SELECT a.* FROM task_instances t CROSS JOIN attempts a ON a.run_id = t.run_id AND a.task_id = t.task_id
    WHERE t.run_id = ? AND t.map_task IS NULL ORDER BY a.attempt_id`,

  // --- a worker's own path: leases renewed together, starts after a wait in its queue ---
  renewLeases: `
    UPDATE attempts SET lease_expires_at = @until
    WHERE attempt_id IN (SELECT value FROM json_each(@attemptIds)) AND worker_id = @workerId AND state = 'running'
    RETURNING attempt_id`,

  // --- metrics: counts over the indexes of live rows, or a short range of recent intervals ---
  metricLiveRuns: `SELECT pipeline_id, state, count(*) AS n FROM runs WHERE state IN ('queued', 'running') GROUP BY pipeline_id, state`,
  metricRecentRuns: `
    SELECT pipeline_id, state, count(*) AS n FROM runs
    WHERE pipeline_id IN (SELECT value FROM json_each(?)) AND state IN ('queued', 'running', 'success', 'failed') AND interval_start >= ?
    GROUP BY pipeline_id, state`,
  metricTaskInstancesOfLiveRuns: `
    SELECT r.pipeline_id, t.task_id, t.state, count(*) AS n
    FROM runs r JOIN task_instances t ON t.run_id = r.run_id
    WHERE r.state IN ('queued', 'running')
    GROUP BY r.pipeline_id, t.task_id, t.state`,
  // Either partial index of queued rows would do; naming one keeps the plan from wandering.
  metricQueuedByPool: `SELECT pool, count(*) AS n, min(queued_at) AS oldest FROM task_instances INDEXED BY task_instances_queued WHERE state = 'queued' GROUP BY pool`,
  metricOpenIncidents: `SELECT kind, pipeline_id, acknowledged_at IS NOT NULL AS acknowledged, ack_until, count(*) AS n FROM incidents WHERE resolved_at IS NULL GROUP BY kind, pipeline_id, acknowledged_at IS NOT NULL, ack_until`,
  // --- external jobs: fenced like a finish (running, this worker's, the current attempt) ---
  insertExternalJob: `
    INSERT INTO external_jobs (run_id, task_id, attempt_id, try_number, job_key, handle, adapter, link, state, submitted_at, held_pool, held_slots)
    SELECT a.run_id, a.task_id, a.attempt_id, a.try_number, @key, @handle, @adapter, @link, 'open', @at,
           CASE WHEN @holdsPool = 1 THEN t.pool END, CASE WHEN @holdsPool = 1 AND t.pool IS NOT NULL THEN t.slots ELSE 0 END
    FROM attempts a JOIN task_instances t ON t.run_id = a.run_id AND t.task_id = a.task_id AND t.current_attempt_id = a.attempt_id
    WHERE a.attempt_id = @attemptId AND a.worker_id = @workerId AND a.state = 'running'
    ON CONFLICT DO NOTHING
    RETURNING job_id`,
  selectExternalJob: `SELECT j.*, r.pipeline_id FROM external_jobs j JOIN runs r ON r.run_id = j.run_id WHERE j.job_id = ?`,
  selectLiveExternalJob: `
    SELECT j.*, r.pipeline_id FROM external_jobs j JOIN runs r ON r.run_id = j.run_id
    WHERE j.run_id = ? AND j.task_id = ? AND j.state IN ('open', 'cancel_requested')`,
  countExternalJobs: `SELECT count(*) AS n FROM external_jobs WHERE run_id = ? AND task_id = ?`,
  listExternalJobs: `
    SELECT j.*, r.pipeline_id FROM external_jobs j JOIN runs r ON r.run_id = j.run_id
    WHERE j.run_id = @runId AND (@taskId IS NULL OR j.task_id = @taskId) ORDER BY j.job_id`,
  endExternalJobByAttempt: `
    UPDATE external_jobs SET state = @state, ended_at = @at, note = @note
    WHERE job_id = @jobId AND state IN ('open', 'cancel_requested')
      AND EXISTS (SELECT 1 FROM attempts a JOIN task_instances t
                    ON t.run_id = a.run_id AND t.task_id = a.task_id AND t.current_attempt_id = a.attempt_id
                  WHERE a.attempt_id = @attemptId AND a.worker_id = @workerId AND a.state = 'running'
                    AND a.run_id = external_jobs.run_id AND a.task_id = external_jobs.task_id)`,
  endRequestedExternalJob: `
    UPDATE external_jobs SET state = @state, ended_at = @at, note = coalesce(@note, note)
    WHERE job_id = @jobId AND state = 'cancel_requested'`,
  // A job is to be cancelled once its task instance no longer waits on it: not running an attempt,
  // not between polls, not waiting for a retry that will reattach (a lost attempt).
  requestExternalCancels: `
    UPDATE external_jobs SET state = 'cancel_requested', note = ?
    WHERE run_id = ? AND state = 'open'
      AND NOT EXISTS (SELECT 1 FROM task_instances t WHERE t.run_id = external_jobs.run_id AND t.task_id = external_jobs.task_id
                        AND t.state IN ('running', 'up_for_reschedule', 'up_for_retry'))`,
  externalJobsToCancel: `
    SELECT j.*, r.pipeline_id FROM external_jobs j INDEXED BY external_jobs_to_cancel JOIN runs r ON r.run_id = j.run_id
    WHERE j.state = 'cancel_requested' AND r.pipeline_id IN (SELECT value FROM json_each(?))
    ORDER BY j.job_id LIMIT +?`,
} as const;
