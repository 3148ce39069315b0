/**
 * Every SQL statement of the PostgreSQL adapter, in one place. Each runs as a named prepared
 * statement (parsed and planned once per connection); tables are found through the connection's
 * search_path, so one set of statements serves any schema.
 *
 * Concurrency, in short (READ COMMITTED throughout):
 * - A claim locks its candidates with FOR UPDATE SKIP LOCKED: claimers never wait on each other's
 *   rows and never take the same one. Caps that span rows (parallelism, a pipeline's active
 *   tasks, a pool's slots) are counted under a lock on what they cap, taken after the candidates.
 * - Deciding a waiting task from its parents' states reads those states only after locking the
 *   waiting task's row; a parent's finisher that ran concurrently either committed before the
 *   lock was granted (and is seen) or waits for it and decides itself afterwards.
 * - Finishing a run reads "anything still live?" only after locking the run row, for the same
 *   reason: of two last tasks ending together, the second to get the lock sees the first.
 */
export const LIVE_TASK_STATES = `('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule')`;

export const SQL = {
  insertPipelineVersion: `
    INSERT INTO pipeline_versions (pipeline_id, version, definition, created_at)
    VALUES ($1, $2, $3::jsonb, $4) ON CONFLICT DO NOTHING`,
  insertEdges: `
    INSERT INTO task_edges (graph_version, parent, child)
    SELECT $1, e.parent, e.child FROM unnest($2::text[], $3::text[]) AS e(parent, child)
    ON CONFLICT DO NOTHING`,
  selectPipelineVersion: `SELECT * FROM pipeline_versions WHERE pipeline_id = $1 AND version = $2`,

  insertRun: `
    INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind,
                      triggered_by, reason, graph_version, params, created_at)
    VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8, $9, $10::jsonb, $11)
    ON CONFLICT DO NOTHING
    RETURNING *`,
  selectRun: `SELECT * FROM runs WHERE run_id = $1`,
  selectRunByInterval: `SELECT * FROM runs WHERE pipeline_id = $1 AND interval_start = $2 AND interval_end = $3`,
  selectRunsOfPipeline: `SELECT * FROM runs WHERE pipeline_id = $1 ORDER BY interval_start DESC LIMIT $2`,
  selectRuns: `SELECT * FROM runs ORDER BY created_at DESC LIMIT $1`,
  lockRun: `SELECT state FROM runs WHERE run_id = $1 FOR UPDATE`,
  finishRun: `UPDATE runs SET state = $2, ended_at = $3 WHERE run_id = $1`,
  requeueRun: `
    UPDATE runs SET state = 'queued', ended_at = NULL, started_at = NULL, graph_version = $2, params = $3::jsonb
    WHERE run_id = $1
    RETURNING *`,

  insertTaskInstances: `
    INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, pool, slots, priority, queued_at)
    SELECT $1, t.task_id, t.state, t.max_tries, t.trigger_rule, t.pool, t.slots, t.priority,
           CASE WHEN t.state = 'queued' THEN $2::bigint END
    FROM unnest($3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::int[], $9::int[])
      AS t(task_id, state, max_tries, trigger_rule, pool, slots, priority)`,
  selectTaskInstances: `
    SELECT * FROM task_instances WHERE run_id = $1 ORDER BY started_at IS NULL, started_at, task_id`,
  /** Rerun: every task instance of the run, locked in one order so two reruns cannot deadlock. */
  lockTaskInstancesOfRun: `SELECT * FROM task_instances WHERE run_id = $1 ORDER BY task_id FOR UPDATE`,
  deleteTaskInstances: `DELETE FROM task_instances WHERE run_id = $1 AND task_id = ANY($2::text[])`,
  resetTaskInstance: `
    UPDATE task_instances
    SET state = 'scheduled', max_tries = try_number + $3, next_try_at = NULL, reason = NULL,
        trigger_rule = $4, pool = $5, slots = $6, priority = $7,
        current_attempt_id = NULL, queued_at = NULL, started_at = NULL, ended_at = NULL
    WHERE run_id = $1 AND task_id = $2`,

  // --- claiming ---
  /**
   * Retries that are due, then queued work by priority: both locked, skipping rows another
   * claimer holds, in one round trip. `waited_since` is when the row became claimable (the
   * starvation clock of a pool).
   */
  selectCandidates: `
    WITH waiting AS (
      SELECT t.run_id, t.task_id, t.state, t.try_number, t.max_tries, t.pool, t.slots,
             t.next_try_at AS waited_since, r.pipeline_id, 0 AS grp, t.next_try_at AS k1, 0::bigint AS k2
      FROM task_instances t JOIN runs r ON r.run_id = t.run_id
      WHERE t.state IN ('up_for_retry', 'up_for_reschedule') AND t.next_try_at <= $1
      ORDER BY t.next_try_at
      LIMIT $2
      FOR UPDATE OF t SKIP LOCKED
    ), queued AS (
      SELECT t.run_id, t.task_id, t.state, t.try_number, t.max_tries, t.pool, t.slots,
             t.queued_at AS waited_since, r.pipeline_id, 1 AS grp, -t.priority::bigint AS k1, t.queued_at AS k2
      FROM task_instances t JOIN runs r ON r.run_id = t.run_id
      WHERE t.state = 'queued'
      ORDER BY t.priority DESC, t.queued_at, t.task_id
      LIMIT $2
      FOR UPDATE OF t SKIP LOCKED
    )
    SELECT * FROM waiting UNION ALL SELECT * FROM queued
    ORDER BY grp, k1, k2, task_id`,
  selectRunCandidates: `
    SELECT t.run_id, t.task_id, t.state, t.try_number, t.max_tries, t.pool, t.slots,
           t.queued_at AS waited_since, r.pipeline_id
    FROM task_instances t JOIN runs r ON r.run_id = t.run_id
    WHERE t.run_id = $1
      AND (t.state = 'queued' OR (t.state IN ('up_for_retry', 'up_for_reschedule') AND t.next_try_at <= $2))
    ORDER BY t.priority DESC, t.queued_at, t.task_id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED`,
  /** Serialises claimers under the same cap until they commit; keys are sorted by the caller. */
  lockCaps: `SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest($1::text[]) AS k`,
  countRunningAll: `SELECT count(*) AS n FROM task_instances WHERE state = 'running'`,
  countRunningOfPipelines: `
    SELECT r.pipeline_id, count(*) AS n
    FROM task_instances t JOIN runs r ON r.run_id = t.run_id
    WHERE t.state = 'running' AND r.pipeline_id = ANY($1::text[])
    GROUP BY r.pipeline_id`,
  /** The pools' rows are the locks of their slots: claimers of one pool take turns. */
  lockPools: `SELECT name, slots FROM pools WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE`,
  poolsInUse: `
    SELECT pool, sum(slots) AS used FROM task_instances
    WHERE state = 'running' AND pool = ANY($1::text[])
    GROUP BY pool`,
  /**
   * Starts the chosen attempts in one statement: attempt rows, their task instances, and the
   * runs that start now; returns what the worker needs to run each.
   */
  startAttempts: `
    WITH chosen AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS c(run_id, task_id, try_number, log_path)
    ), started AS (
      INSERT INTO attempts (run_id, task_id, try_number, state, worker_id, pid, started_at, lease_expires_at, log_path)
      SELECT run_id, task_id, try_number, 'running', $5, $6, $7, $8, log_path FROM chosen
      RETURNING attempt_id, run_id, task_id, try_number, log_path
    ), instances AS (
      UPDATE task_instances t
      SET state = 'running', try_number = s.try_number, current_attempt_id = s.attempt_id, next_try_at = NULL,
          started_at = coalesce(t.started_at, $7)
      FROM started s
      WHERE t.run_id = s.run_id AND t.task_id = s.task_id
      RETURNING t.run_id, t.task_id, t.max_tries, t.started_at, s.attempt_id, s.try_number, s.log_path
    ), starting_runs AS (
      UPDATE runs SET state = 'running', started_at = coalesce(started_at, $7)
      WHERE run_id IN (SELECT run_id FROM chosen) AND state = 'queued'
    )
    SELECT i.*, r.pipeline_id, r.interval_start, r.interval_end, r.business_date, r.graph_version, r.params
    FROM instances i JOIN runs r ON r.run_id = i.run_id
    ORDER BY i.attempt_id`,
  renewLease: `
    UPDATE attempts SET lease_expires_at = $1 WHERE attempt_id = $2 AND worker_id = $3 AND state = 'running'`,

  // --- finishing ---
  /** The attempt and its task instance, locked: a finish and a loss of one attempt take turns. */
  lockAttemptForFinish: `
    SELECT a.run_id, a.task_id, a.state, a.worker_id, a.lease_expires_at, t.state AS ti_state, t.current_attempt_id,
           t.try_number, t.max_tries, r.graph_version, r.business_date, r.pipeline_id, r.trigger_kind
    FROM attempts a
    JOIN task_instances t ON t.run_id = a.run_id AND t.task_id = a.task_id
    JOIN runs r ON r.run_id = a.run_id
    WHERE a.attempt_id = $1
    FOR UPDATE OF a, t`,
  /** Records the attempt's end and its task instance's new state together. */
  endAttempt: `
    WITH ended AS (
      UPDATE attempts
      SET state = $2, ended_at = $3, exit_code = $4, error_class = $5, error_message = $6, summary = $7,
          lease_expires_at = NULL
      WHERE attempt_id = $1
    )
    UPDATE task_instances SET state = $10, next_try_at = $11, reason = $12, ended_at = $13
    WHERE run_id = $8 AND task_id = $9`,
  /** Dataset events are numbered in commit order for readers; see lockDatasetEventsForRead. */
  lockDatasetEventsForWrite: `SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))`,
  lockDatasetEventsForRead: `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
  insertDatasetEvents: `
    INSERT INTO dataset_events (dataset, business_date, run_id, pipeline_id, task_id, trigger_kind, at)
    SELECT d, $2, $3, $4, $5, $6, $7 FROM unnest($1::text[]) AS d`,
  /** The waiting children of a task that just settled, locked before their parents are read. */
  lockWaitingChildren: `
    SELECT t.task_id, t.trigger_rule
    FROM task_edges e JOIN task_instances t ON t.run_id = $1 AND t.task_id = e.child
    WHERE e.graph_version = $2 AND e.parent = $3 AND t.state = 'scheduled'
    ORDER BY t.task_id
    FOR UPDATE OF t`,
  selectChildren: `SELECT child FROM task_edges WHERE graph_version = $1 AND parent = $2 ORDER BY child`,
  lockWaitingTasks: `
    SELECT task_id, trigger_rule FROM task_instances
    WHERE run_id = $1 AND task_id = ANY($2::text[]) AND state = 'scheduled'
    ORDER BY task_id
    FOR UPDATE`,
  selectUpstreamStates: `
    SELECT e.child, e.parent, t.state
    FROM task_edges e JOIN task_instances t ON t.run_id = $1 AND t.task_id = e.parent
    WHERE e.graph_version = $2 AND e.child = ANY($3::text[])`,
  /** Applies the trigger-rule decisions of one step: queued, skipped or upstream_failed. */
  settleTaskInstances: `
    UPDATE task_instances t
    SET state = s.state, reason = s.reason,
        queued_at = CASE WHEN s.state = 'queued' THEN $2 ELSE t.queued_at END,
        ended_at = CASE WHEN s.state = 'queued' THEN t.ended_at ELSE $2 END
    FROM unnest($3::text[], $4::text[], $5::text[]) AS s(task_id, state, reason)
    WHERE t.run_id = $1 AND t.task_id = s.task_id AND t.state = 'scheduled'`,
  setTaskState: `
    UPDATE task_instances SET state = $3, next_try_at = $4, reason = $5, ended_at = $6
    WHERE run_id = $1 AND task_id = $2`,
  rescheduleAttempt: `
    WITH ended AS (
      UPDATE attempts
      SET state = 'rescheduled', ended_at = $2, exit_code = $3, error_class = $4, error_message = $5, summary = $6,
          lease_expires_at = NULL
      WHERE attempt_id = $1
    )
    UPDATE task_instances SET state = 'up_for_reschedule', next_try_at = $9, reason = NULL, ended_at = NULL
    WHERE run_id = $7 AND task_id = $8`,
  /** Read after lockRun: sees every task instance a concurrent finisher of this run committed. */
  runProgress: `
    SELECT EXISTS (SELECT 1 FROM task_instances WHERE run_id = $1 AND state IN ${LIVE_TASK_STATES}) AS live,
           EXISTS (SELECT 1 FROM task_instances WHERE run_id = $1 AND state IN ('failed', 'upstream_failed')) AS failed`,
  nextRetryAt: `
    SELECT min(next_try_at) AS at FROM task_instances
    WHERE run_id = $1 AND state IN ('up_for_retry', 'up_for_reschedule')`,
  countRunningInRun: `SELECT count(*) AS n FROM task_instances WHERE run_id = $1 AND state = 'running'`,
  /** Delivered to listeners when the transaction commits, and only then. */
  notifyWork: `SELECT pg_notify($1, '')`,

  selectAttempts: `SELECT * FROM attempts WHERE run_id = $1 ORDER BY attempt_id`,
  selectAttemptsOfTask: `SELECT * FROM attempts WHERE run_id = $1 AND task_id = $2 ORDER BY attempt_id`,

  insertAudit: `
    INSERT INTO audit_log (at, actor, action, pipeline_id, run_id, task_id, reason, graph_version, details)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)`,
  selectAudit: `SELECT * FROM audit_log ORDER BY id DESC LIMIT $1`,
  selectAuditOfPipeline: `SELECT * FROM audit_log WHERE pipeline_id = $1 ORDER BY id DESC LIMIT $2`,

  // --- scheduling ---
  insertPipelineState: `INSERT INTO pipelines (pipeline_id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
  selectPipelineState: `SELECT * FROM pipelines WHERE pipeline_id = $1`,
  lockPipelineState: `SELECT * FROM pipelines WHERE pipeline_id = $1 FOR UPDATE`,
  setPaused: `
    UPDATE pipelines SET paused = $2, paused_note = $3, paused_by = $4, paused_at = $5 WHERE pipeline_id = $1
    RETURNING *`,
  advanceCursor: `
    UPDATE pipelines SET schedule_cursor = greatest(coalesce(schedule_cursor, $2), $2) WHERE pipeline_id = $1`,
  countLiveRuns: `SELECT count(*) AS n FROM runs WHERE pipeline_id = $1 AND state IN ('queued', 'running')`,
  insertSkippedIntervals: `
    INSERT INTO skipped_intervals (pipeline_id, interval_start, interval_end, business_date, reason, at)
    SELECT $1, i.s, i.e, i.d, $2, $3 FROM unnest($4::bigint[], $5::bigint[], $6::text[]) AS i(s, e, d)
    ON CONFLICT DO NOTHING`,
  selectRunsInRange: `
    SELECT * FROM runs WHERE pipeline_id = $1 AND interval_start >= $2 AND interval_start < $3 ORDER BY interval_start`,
  selectSkippedInRange: `
    SELECT * FROM skipped_intervals WHERE pipeline_id = $1 AND interval_start >= $2 AND interval_start < $3
    ORDER BY interval_start`,

  // --- pools ---
  selectPools: `SELECT * FROM pools ORDER BY name`,
  selectPoolHolders: `
    SELECT t.pool, t.run_id, t.task_id, t.slots, a.worker_id
    FROM task_instances t LEFT JOIN attempts a ON a.attempt_id = t.current_attempt_id
    WHERE t.state = 'running' AND t.pool IS NOT NULL
    ORDER BY t.pool, t.started_at`,
  upsertPool: `
    INSERT INTO pools (name, slots, description, updated_at) VALUES ($1, $2, $3, $4)
    ON CONFLICT (name) DO UPDATE SET slots = excluded.slots, description = excluded.description, updated_at = excluded.updated_at`,
  insertPoolsIfAbsent: `
    INSERT INTO pools (name, slots, description, updated_at)
    SELECT p.name, p.slots, NULL, $3 FROM unnest($1::text[], $2::int[]) AS p(name, slots)
    ON CONFLICT DO NOTHING`,
  deletePool: `DELETE FROM pools WHERE name = $1`,

  // --- workers, leases, leadership ---
  upsertWorker: `
    INSERT INTO workers (worker_id, host, pid, concurrency, started_at, last_seen) VALUES ($1, $2, $3, $4, $5, $5)
    ON CONFLICT (worker_id) DO UPDATE SET last_seen = excluded.last_seen, concurrency = excluded.concurrency`,
  deleteWorker: `DELETE FROM workers WHERE worker_id = $1`,
  selectWorkers: `SELECT * FROM workers ORDER BY last_seen DESC`,
  selectExpiredAttempts: `
    SELECT a.attempt_id, a.run_id, a.task_id, a.try_number, a.worker_id, a.lease_expires_at, r.pipeline_id
    FROM attempts a JOIN runs r ON r.run_id = a.run_id
    WHERE a.state = 'running' AND a.lease_expires_at < $1
    ORDER BY a.lease_expires_at LIMIT $2`,
  loseAttempt: `
    UPDATE attempts
    SET state = 'lost', ended_at = $2, error_class = 'LeaseExpired', error_message = $3, lease_expires_at = NULL
    WHERE attempt_id = $1`,
  /**
   * Takes or keeps a role's lease in one statement: inserted when absent, renewed by its holder,
   * taken over (with the next term, which fences the deposed holder) once expired. Returns no
   * row when someone else holds a live lease.
   */
  tryLead: `
    INSERT INTO leases AS l (role, holder, term, expires_at, renewed_at) VALUES ($1, $2, 1, $3, $4)
    ON CONFLICT (role) DO UPDATE
      SET holder = excluded.holder,
          term = CASE WHEN l.holder = excluded.holder THEN l.term ELSE l.term + 1 END,
          expires_at = excluded.expires_at,
          renewed_at = excluded.renewed_at
      WHERE l.holder = excluded.holder OR l.expires_at <= excluded.renewed_at
    RETURNING *`,
  selectLease: `SELECT * FROM leases WHERE role = $1`,
  resignLease: `UPDATE leases SET expires_at = 0 WHERE role = $1 AND holder = $2`,

  // --- datasets ---
  maxDatasetEventId: `SELECT coalesce(max(id), 0) AS id FROM dataset_events`,
  selectDatasetEventsAfter: `
    SELECT id, dataset, business_date FROM dataset_events
    WHERE dataset = ANY($1::text[]) AND id > $2 AND id <= $3 ORDER BY id`,
  upsertDatasetWait: `
    INSERT INTO dataset_waits (pipeline_id, business_date, dataset, event_id) VALUES ($1, $2, $3, $4)
    ON CONFLICT (pipeline_id, business_date, dataset) DO UPDATE SET event_id = excluded.event_id`,
  setEventCursor: `UPDATE pipelines SET event_cursor = $2 WHERE pipeline_id = $1`,
  selectDatasetWaits: `SELECT business_date, dataset FROM dataset_waits WHERE pipeline_id = $1 ORDER BY business_date, dataset`,
  deleteDatasetWaits: `DELETE FROM dataset_waits WHERE pipeline_id = $1 AND business_date = $2`,
  selectDatasetEvents: `SELECT * FROM dataset_events ORDER BY id DESC LIMIT $1`,
  selectDatasetEventsOf: `SELECT * FROM dataset_events WHERE dataset = $1 ORDER BY id DESC LIMIT $2`,
} as const;

export type StatementName = keyof typeof SQL;

/** Statements outside the prepared set: transactions, schema bookkeeping, the work channel. */
export const SESSION_SQL = {
  begin: `BEGIN`,
  commit: `COMMIT`,
  rollback: `ROLLBACK`,
  ping: `SELECT 1`,
  lock: `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
  createSchema: (quotedSchema: string) => `CREATE SCHEMA IF NOT EXISTS ${quotedSchema}`,
  setSearchPath: (quotedSchema: string) => `SET LOCAL search_path TO ${quotedSchema}`,
  createMigrationsTable: `
    CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`,
  appliedVersions: `SELECT version FROM schema_migrations`,
  recordVersion: `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
  listen: (quotedChannel: string) => `LISTEN ${quotedChannel}`,
} as const;

/** Advisory-lock keys and the notification channel, per schema: two installations never meet. */
export const KEYS = {
  migrate: (schema: string) => `idem:${schema}:migrate`,
  parallelism: (schema: string) => `idem:${schema}:parallelism`,
  pipelineCap: (schema: string, pipelineId: string) => `idem:${schema}:pipeline:${pipelineId}`,
  datasetEvents: (schema: string) => `idem:${schema}:dataset-events`,
  channel: (schema: string) => `idem_work_${schema}`.slice(0, 63),
} as const;
