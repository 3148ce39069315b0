/**
 * Every SQL statement of the PostgreSQL adapter, in one place. Each runs as a named prepared
 * statement (parsed and planned once per connection); tables are found through the connection's
 * search_path, so one set of statements serves any schema.
 *
 * Concurrency, in short (READ COMMITTED throughout):
 * - A claim locks its candidates with FOR UPDATE SKIP LOCKED: claimers never wait on each other's
 *   rows and never take the same one. Caps that span rows (parallelism, a pipeline's active
 *   tasks, a pool's slots) are counted under a lock on what they cap, taken before the count.
 * - The run row is the lock for every decision inside a run: a transaction that ends a task,
 *   settles its children by their trigger rules, or asks "is anything still live?" holds it
 *   first and reads after. Of two parents (or two last tasks) ending at once, the second to get
 *   the lock sees the first. Claims move rows from queued to running, which no decision reads,
 *   so they never wait on it.
 */
import { ErrorClass } from "../../core/model/error-classes.ts";
import { MAP_COUNT_COLUMNS, MAP_COUNT_SELECT } from "../map-count-sql.ts";

export const SQL = {
  insertPipelineVersion: `
    INSERT INTO pipeline_versions (pipeline_id, version, definition, created_at)
    VALUES ($1, $2, $3::jsonb, $4) ON CONFLICT DO NOTHING`,
  insertEdges: `
    INSERT INTO task_edges (graph_version, parent, child)
    SELECT $1::text, e.parent, e.child FROM unnest($2::text[], $3::text[]) AS e(parent, child)
    ON CONFLICT DO NOTHING`,
  selectPipelineVersion: `SELECT * FROM pipeline_versions WHERE pipeline_id = $1 AND version = $2`,

  insertCodeVersion: `
    INSERT INTO code_versions (pipeline_id, code_version, graph_version, file, location, packages, created_at, created_by)
    VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8)
    ON CONFLICT (pipeline_id, code_version) DO UPDATE SET collected_at = NULL WHERE code_versions.collected_at IS NOT NULL`,
  selectCodeVersion: `SELECT * FROM code_versions WHERE pipeline_id = $1 AND code_version = $2`,

  selectCodeVersionForCollection: `SELECT collected_at FROM code_versions WHERE pipeline_id = $1 AND code_version = $2 FOR UPDATE`,
  selectCodeVersionForRun: `SELECT collected_at FROM code_versions WHERE pipeline_id = $1 AND code_version = $2 FOR SHARE`,
  selectCodeVersionNeeded: `
    SELECT 1 AS needed FROM runs WHERE pipeline_id = $1 AND code_version = $2
      AND (state IN ('queued', 'running') OR created_at >= $3 OR ended_at >= $3) LIMIT 1`,
  markCodeVersionCollected: `UPDATE code_versions SET collected_at = $3 WHERE pipeline_id = $1 AND code_version = $2`,

  selectCodeVersionUses: `
    SELECT v.*, count(r.run_id) AS runs, min(r.started_at) AS first_ran_at, min(r.business_date) AS first_date, max(r.business_date) AS last_date
    FROM code_versions v LEFT JOIN runs r ON r.pipeline_id = v.pipeline_id AND r.code_version = v.code_version
    WHERE v.pipeline_id = $1 GROUP BY v.pipeline_id, v.code_version ORDER BY v.created_at, v.code_version`,
  insertRun: `
    INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind,
                      triggered_by, reason, graph_version, params, created_at, backfill_id, code_version)
    VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8, $9, $10::jsonb, $11, $12, $13)
    ON CONFLICT DO NOTHING
    RETURNING *`,
  selectRun: `SELECT * FROM runs WHERE run_id = $1`,
  selectRunByInterval: `SELECT * FROM runs WHERE pipeline_id = $1 AND interval_start = $2 AND interval_end = $3`,
  selectRunsOfPipeline: `SELECT * FROM runs WHERE pipeline_id = $1 ORDER BY interval_start DESC LIMIT $2`,
  selectRuns: `SELECT * FROM runs ORDER BY created_at DESC LIMIT $1`,
  lockRun: `SELECT * FROM runs WHERE run_id = $1 FOR UPDATE`,
  finishRun: `UPDATE runs SET state = $2, ended_at = $3 WHERE run_id = $1`,
  requeueRun: `
    UPDATE runs SET state = 'queued', ended_at = NULL, started_at = NULL, graph_version = $2, params = $3::jsonb
    WHERE run_id = $1
    RETURNING *`,
  /** A rerun of some tasks only: the run is live again, with its graph version and params as they were. */
  /** A run moved to other code (a rerun on the latest code): its graph moves with it. */
  repinRun: `UPDATE runs SET code_version = $2, graph_version = $3 WHERE run_id = $1`,
  reopenRun: `
    UPDATE runs SET state = CASE WHEN state IN ('success', 'failed') THEN 'queued' ELSE state END, ended_at = NULL
    WHERE run_id = $1`,
  joinBackfill: `
    WITH tasks AS (UPDATE task_instances SET from_backfill = true WHERE run_id = $1)
    UPDATE runs SET backfill_id = $2, trigger_kind = 'backfill', triggered_by = $3, reason = $4 WHERE run_id = $1`,

  /**
   * The schedule restating an ended run: its trigger becomes "restate", and its task instances
   * are claimed after live runs' (from_backfill is the index's "background work" flag).
   */
  markRestated: `
    WITH tasks AS (UPDATE task_instances SET from_backfill = true WHERE run_id = $1)
    UPDATE runs SET trigger_kind = 'restate', triggered_by = $2, reason = $3, restate_count = restate_count + 1,
                    restated_at = $4, restate_note = NULL, restate_note_for = NULL
    WHERE run_id = $1`,
  noteRestateRefusal: `
    UPDATE runs SET restate_note = $2, restate_note_for = $3
    WHERE run_id = $1 AND restate_note_for IS DISTINCT FROM $3
    RETURNING run_id`,

  insertTaskInstances: `
    INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, pool, slots, priority, queued_at, from_backfill)
    SELECT $1::text, t.task_id, t.state, t.max_tries, t.trigger_rule, t.pool, t.slots, t.priority,
           CASE WHEN t.state = 'queued' THEN $2::bigint END, $10::boolean
    FROM unnest($3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::int[], $9::int[])
      AS t(task_id, state, max_tries, trigger_rule, pool, slots, priority)`,
  selectTaskInstance: `SELECT * FROM task_instances WHERE run_id = $1 AND task_id = $2`,
  lockTaskInstance: `SELECT * FROM task_instances WHERE run_id = $1 AND task_id = $2 FOR UPDATE`,
  selectTaskInstances: `
    SELECT * FROM task_instances WHERE run_id = $1 ORDER BY started_at IS NULL, started_at, task_id`,
  /** Rerun: every task instance of the run, locked, so no claim takes one while it is being reset. */
  lockTaskInstancesOfRun: `SELECT * FROM task_instances WHERE run_id = $1 ORDER BY task_id FOR UPDATE`,
  deleteTaskInstances: `DELETE FROM task_instances WHERE run_id = $1 AND task_id = ANY($2::text[])`,
  resetTaskInstance: `
    UPDATE task_instances
    SET state = 'scheduled', max_tries = try_number + $3, next_try_at = NULL, reason = NULL,
        trigger_rule = $4, pool = $5, slots = $6, priority = $7,
        current_attempt_id = NULL, queued_at = NULL, started_at = NULL, ended_at = NULL,
        map_live = NULL, map_failing = NULL, map_total = NULL, map_held_at = NULL,
        map_in_scheduled = NULL, map_in_queued = NULL, map_in_running = NULL, map_in_success = NULL, map_in_failed = NULL, map_in_up_for_retry = NULL, map_in_up_for_reschedule = NULL, map_in_skipped = NULL, map_in_upstream_failed = NULL, map_in_removed = NULL
    WHERE run_id = $1 AND task_id = $2`,

  // --- claiming ---
  /**
   * Retries that are due, then queued work by priority, live runs before backfills: both locked,
   * skipping rows another claimer holds, in one round trip. `waited_since` is when the row became
   * claimable (the starvation clock of a pool).
   */
  selectCandidates: `
    WITH waiting AS (
      SELECT * FROM task_instances
      WHERE state IN ('up_for_retry', 'up_for_reschedule') AND next_try_at <= $1
      ORDER BY from_backfill, next_try_at
      LIMIT $2
      FOR UPDATE SKIP LOCKED
    ), queued AS (
      -- task_instances alone, in the order of its partial index: the planner walks the index
      -- and stops at the limit, whatever its statistics say
      SELECT * FROM task_instances
      WHERE state = 'queued'
      ORDER BY from_backfill, priority DESC, queued_at, task_id
      LIMIT $2
      FOR UPDATE SKIP LOCKED
    ), candidates AS (
      SELECT w.*, w.next_try_at AS waited_since, 0 AS grp, w.next_try_at AS k1, 0::bigint AS k2 FROM waiting w
      UNION ALL
      SELECT q.*, q.queued_at AS waited_since, 1 AS grp, -q.priority::bigint AS k1, q.queued_at AS k2 FROM queued q
    )
    -- each candidate's run by its primary key (OFFSET 0 keeps the probe a probe: a generic plan
    -- guesses the candidates many and would hash the whole runs table, history and all)
    SELECT c.run_id, c.task_id, c.state, c.try_number, c.max_tries, c.pool, c.slots, c.priority, c.waited_since,
           c.grp, c.grp = 0 AS due, c.from_backfill AS background, r.pipeline_id
    FROM candidates c CROSS JOIN LATERAL (SELECT r.pipeline_id FROM runs r WHERE r.run_id = c.run_id OFFSET 0) r
    ORDER BY c.grp, c.from_backfill, c.k1, c.k2, c.task_id`,
  /**
   * One run's queued rows and its due retries, each from its partial index in order, cut at the
   * limit (O(what is claimed), not O(the run)); both locked, skipping rows another claimer holds.
   */
  selectRunCandidates: `
    WITH queued AS (
      SELECT * FROM task_instances
      WHERE run_id = $1 AND state = 'queued'
      ORDER BY priority DESC, queued_at, task_id
      LIMIT $3
      FOR UPDATE SKIP LOCKED
    ), waiting AS (
      SELECT * FROM task_instances
      WHERE run_id = $1 AND state IN ('up_for_retry', 'up_for_reschedule') AND next_try_at <= $2
      ORDER BY next_try_at
      LIMIT $3
      FOR UPDATE SKIP LOCKED
    ), candidates AS (
      SELECT * FROM queued UNION ALL SELECT * FROM waiting
    )
    SELECT t.run_id, t.task_id, t.state, t.try_number, t.max_tries, t.pool, t.slots, t.priority,
           t.queued_at AS waited_since, false AS due, t.from_backfill AS background, r.pipeline_id
    FROM candidates t CROSS JOIN LATERAL (SELECT r.pipeline_id FROM runs r WHERE r.run_id = t.run_id OFFSET 0) r
    ORDER BY t.priority DESC, t.queued_at, t.task_id`,
  selectBackfillCandidates: `
    SELECT t.run_id, t.task_id, t.state, t.try_number, t.max_tries, t.pool, t.slots, t.priority,
           t.queued_at AS waited_since, false AS due, t.from_backfill AS background, r.pipeline_id
    FROM task_instances t JOIN runs r ON r.run_id = t.run_id
    WHERE r.backfill_id = $1 AND r.state IN ('queued', 'running')
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
    SELECT pool, sum(slots)::int AS used FROM task_instances
    WHERE state = 'running' AND pool = ANY($1::text[])
    GROUP BY pool`,
  /**
   * Remote jobs recorded holding slots of these pools (all pools when null) and still open, with
   * their task instance's state: core's withRemoteHolds decides which count.
   */
  remotePoolHolders: `
    SELECT j.run_id, j.task_id, j.held_pool AS pool, j.held_slots AS slots, j.state AS job_state, t.state AS task_state
    FROM external_jobs j JOIN task_instances t ON t.run_id = j.run_id AND t.task_id = j.task_id
    WHERE j.state = 'open' AND j.held_slots > 0 AND ($1::text[] IS NULL OR j.held_pool = ANY($1::text[]))`,
  /**
   * Starts the chosen attempts in one statement: attempt rows, their task instances, and the
   * runs that start now; returns what the worker needs to run each.
   */
  startAttempts: `
    WITH chosen AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS c(run_id, task_id, try_number, log_path)
    ), started AS (
      INSERT INTO attempts (run_id, task_id, try_number, state, worker_id, pid, started_at, lease_expires_at, log_path)
      SELECT run_id, task_id, try_number, 'running', $5::text, $6::int, $7::bigint, $8::bigint, log_path FROM chosen
      RETURNING attempt_id, run_id, task_id, try_number, log_path
    ), instances AS (
      UPDATE task_instances t
      SET state = 'running', try_number = s.try_number, current_attempt_id = s.attempt_id, next_try_at = NULL,
          started_at = coalesce(t.started_at, $7)
      FROM started s
      WHERE t.run_id = s.run_id AND t.task_id = s.task_id
      RETURNING t.run_id, t.task_id, t.max_tries, t.started_at, t.map_key, t.map_item, s.attempt_id, s.try_number, s.log_path
    ), starting_runs AS (
      -- whoever holds a run's row is busy with it; a claim does not wait (nor deadlock) for that
      UPDATE runs SET state = 'running', started_at = coalesce(started_at, $7)
      WHERE run_id IN (
        SELECT run_id FROM runs WHERE run_id IN (SELECT run_id FROM chosen) AND state = 'queued'
        ORDER BY run_id FOR UPDATE SKIP LOCKED
      )
    )
    SELECT i.*, r.pipeline_id, r.interval_start, r.interval_end, r.business_date, r.graph_version, r.params,
           r.trigger_kind, r.backfill_id, r.code_version
    FROM instances i JOIN runs r ON r.run_id = i.run_id
    ORDER BY i.attempt_id`,
  renewLease: `
    UPDATE attempts SET lease_expires_at = $1 WHERE attempt_id = $2 AND worker_id = $3 AND state = 'running'`,

  // --- finishing, batched (group commit) ---
  /**
   * Locks a batch of attempts that are still current (running, this worker's, its task
   * instance's current attempt) with their task instances and runs, in run order so batches
   * never deadlock. A missing one was refused.
   */
  lockAttemptsForFinish: `
    -- joined by primary keys only, the states checked by the caller (isCurrentAttempt): a
    -- condition on the state would let the planner start from every running row (the partial
    -- indexes) and compare each with every attempt of the batch
    SELECT a.attempt_id, a.run_id, a.task_id, a.state, t.state AS ti_state, t.current_attempt_id,
           t.try_number, t.max_tries, t.pool, r.graph_version
    FROM unnest($1::bigint[], $2::text[]) AS f(attempt_id, worker_id)
    JOIN attempts a ON a.attempt_id = f.attempt_id AND a.worker_id = f.worker_id
    JOIN task_instances t ON t.run_id = a.run_id AND t.task_id = a.task_id
    JOIN runs r ON r.run_id = a.run_id
    ORDER BY a.run_id, a.attempt_id
    FOR UPDATE OF a, t, r`,
  /**
   * Records attempts' ends and their task instances' new states (core's endTry), in one
   * statement, each only if it is still current (running, this worker's, its task instance's
   * current attempt). Sent after lockAttemptsForFinish, so the rows it checks are locked.
   */
  finishAttempts: `
    WITH f AS (
      SELECT f.*, a.run_id, a.task_id
      FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::int[], $6::text[], $7::text[], $8::text[],
                  $9::text[], $10::bigint[], $11::text[], $12::bigint[])
        AS f(attempt_id, worker_id, outcome, now, exit_code, error_class, error_message, summary, state, next_try_at, reason, ended_at)
      -- each attempt and task instance by its primary key, the states checked outside (OFFSET 0
      -- keeps them outside: inside, they would let the planner start from every running row)
      CROSS JOIN LATERAL (
        SELECT a.run_id, a.task_id, a.state, a.worker_id, t.state AS ti_state, t.current_attempt_id
        FROM attempts a JOIN task_instances t ON t.run_id = a.run_id AND t.task_id = a.task_id
        WHERE a.attempt_id = f.attempt_id
        OFFSET 0
      ) a
      WHERE a.state = 'running' AND a.worker_id = f.worker_id AND a.ti_state = 'running' AND a.current_attempt_id = f.attempt_id
    ), ended AS (
      UPDATE attempts a
      SET state = f.outcome, ended_at = f.now, exit_code = f.exit_code, error_class = f.error_class,
          error_message = f.error_message, summary = f.summary, lease_expires_at = NULL
      FROM f WHERE a.attempt_id = f.attempt_id
    )
    UPDATE task_instances t
    SET state = f.state, next_try_at = f.next_try_at, reason = f.reason, ended_at = f.ended_at
    FROM f WHERE t.run_id = f.run_id AND t.task_id = f.task_id`,
  /**
   * The waiting children of the batch's tasks, each with all its parents' states. Sent right
   * after lockAttemptsForFinish, so it reads with the runs locked.
   */
  waitingChildrenOfAttempts: `
    -- driven from the batch's attempts, one index probe per step, whatever the statistics say
    -- (OFFSET 0 keeps each step a step: the planner may not fold them into one join to reorder)
    SELECT a.run_id, a.task_id AS parent, w.task_id, w.trigger_rule, e.parent AS upstream, u.state AS upstream_state
    FROM unnest($1::bigint[]) AS ids(attempt_id)
    JOIN LATERAL (
      SELECT a.run_id, a.task_id, r.graph_version
      FROM attempts a JOIN runs r ON r.run_id = a.run_id
      WHERE a.attempt_id = ids.attempt_id OFFSET 0
    ) a ON true
    JOIN LATERAL (
      SELECT c.child FROM task_edges c WHERE c.graph_version = a.graph_version AND c.parent = a.task_id OFFSET 0
    ) c ON true
    JOIN LATERAL (
      SELECT t.task_id, t.trigger_rule FROM task_instances t
      WHERE t.run_id = a.run_id AND t.task_id = c.child AND t.state = 'scheduled' AND t.map_total IS NULL OFFSET 0
    ) w ON true
    JOIN LATERAL (
      SELECT e.parent FROM task_edges e WHERE e.graph_version = a.graph_version AND e.child = w.task_id OFFSET 0
    ) e ON true
    JOIN LATERAL (
      SELECT u.state FROM task_instances u WHERE u.run_id = a.run_id AND u.task_id = e.parent OFFSET 0
    ) u ON true
    ORDER BY a.run_id, a.task_id, w.task_id`,
  /** Counted by triggers (migration 17): one row per run, read after the batch's writes. */
  runsProgressOfAttempts: `
    SELECT r.run_id, r.live_tasks > 0 AS live, r.failed_tasks > 0 AS failed
    FROM runs r WHERE r.run_id IN (SELECT a.run_id FROM attempts a WHERE a.attempt_id = ANY($1::bigint[]))`,
  runsProgress: `SELECT run_id, live_tasks > 0 AS live, failed_tasks > 0 AS failed FROM runs WHERE run_id = ANY($1::text[])`,
  taskStatesOfAttempts: `
    SELECT a.attempt_id, t.state FROM attempts a
    LEFT JOIN task_instances t ON t.run_id = a.run_id AND t.task_id = a.task_id
    WHERE a.attempt_id = ANY($1::bigint[])`,
  /** Decisions across runs in one statement: queued, skipped or upstream_failed. */
  settleTaskInstancesOfRuns: `
    UPDATE task_instances t
    SET state = s.state, reason = s.reason,
        queued_at = CASE WHEN s.state = 'queued' THEN s.at ELSE t.queued_at END,
        ended_at = CASE WHEN s.state = 'queued' THEN t.ended_at ELSE s.at END
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS s(run_id, task_id, state, reason, at)
    WHERE t.run_id = s.run_id AND t.task_id = s.task_id AND t.state = 'scheduled'`,
  finishRuns: `
    UPDATE runs SET state = s.state, ended_at = s.ended_at
    FROM unnest($1::text[], $2::text[], $3::bigint[]) AS s(run_id, state, ended_at)
    WHERE runs.run_id = s.run_id`,

  // --- finishing, one attempt (losses, reschedules, datasets) ---
  /** The attempt, its task instance and its run, locked: a finish and a loss of one attempt take turns. */
  lockAttemptForFinish: `
    SELECT a.run_id, a.task_id, a.state, a.worker_id, a.lease_expires_at, t.state AS ti_state, t.current_attempt_id,
           t.try_number, t.max_tries, r.graph_version, r.business_date, r.pipeline_id, r.trigger_kind
    FROM attempts a
    JOIN task_instances t ON t.run_id = a.run_id AND t.task_id = a.task_id
    JOIN runs r ON r.run_id = a.run_id
    WHERE a.attempt_id = $1
    FOR UPDATE OF a, t, r`,
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
  /**
   * Fan-out (migration 26). A list arrives as arrays (keys, positions, items, states) in chunks:
   * one statement per chunk, never one per item. Instances take their tries, pool, slots and
   * priority from their mapped task's row.
   */
  mapExistingKeys: `SELECT map_key, state FROM task_instances WHERE run_id = $1 AND map_task = $2`,
  /**
   * An operator's selector (core's keyLookup): one key, or the range of a glob's literal prefix
   * (map_key is COLLATE "C": byte order, as core's range assumes), over the unique index of
   * (run, task, key), so a clear or mark by key reads the keys it may name, not every instance.
   */
  mapInstanceOfKey: `SELECT map_key, state FROM task_instances WHERE run_id = $1 AND map_task = $2 AND map_key = $3`,
  mapInstancesInRange: `
    SELECT map_key, state FROM task_instances WHERE run_id = $1 AND map_task = $2 AND map_key >= $3 AND map_key < $4`,
  mapInstancesFrom: `SELECT map_key, state FROM task_instances WHERE run_id = $1 AND map_task = $2 AND map_key >= $3`,
  /** A mapped task waits again for its instances; its counts are the trigger's, kept on every instance's change. */
  mapReopen: `
    UPDATE task_instances SET state = 'scheduled', reason = NULL, ended_at = NULL
    WHERE run_id = $1 AND task_id = $2 AND map_total IS NOT NULL`,
  mapInsert: `
    INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, pool, slots, priority, queued_at, from_backfill,
                                map_task, map_key, map_position, map_item, map_parent)
    SELECT t.run_id, t.task_id || '[' || j.key || ']', j.state, $8::int, t.trigger_rule, t.pool, t.slots,
           t.priority, CASE WHEN j.state = 'queued' THEN $3::bigint END, t.from_backfill, t.task_id, j.key, j.position, j.item,
           CASE WHEN $9::text IS NOT NULL THEN $9::text || '[' || j.key || ']' END
    FROM task_instances t, unnest($4::text[], $5::int[], $6::text[], $7::text[]) AS j(key, position, item, state)
    WHERE t.run_id = $1 AND t.task_id = $2`,
  mapResetKept: `
    UPDATE task_instances i
    SET state = j.state, map_position = j.position, map_item = j.item, max_tries = i.try_number + $8::int, next_try_at = NULL,
        reason = NULL, current_attempt_id = NULL, queued_at = CASE WHEN j.state = 'queued' THEN $3::bigint END,
        started_at = NULL, ended_at = NULL, map_held_at = NULL
    FROM unnest($4::text[], $5::int[], $6::text[], $7::text[]) AS j(key, position, item, state)
    WHERE i.run_id = $1 AND i.map_task = $2 AND i.map_key = j.key`,
  mapRemove: `
    UPDATE task_instances SET state = 'removed', reason = $4, next_try_at = NULL, ended_at = $3
    WHERE run_id = $1 AND map_task = $2 AND map_key = ANY($5::text[])`,
  /** One pass over the instances: every count the mapped task's row keeps (migrations 26 and 33). */
  mapRecount: `
    UPDATE task_instances SET state = 'scheduled', reason = NULL, ended_at = NULL, map_max_active = $3,
      (${MAP_COUNT_COLUMNS}) = (
        SELECT ${MAP_COUNT_SELECT}
        FROM task_instances m WHERE m.run_id = $1 AND m.map_task = $2)
    WHERE run_id = $1 AND task_id = $2`,
  /** Instances of a mapped task that hold a maxActive place (held ones wait as 'scheduled'). */
  mapActive: `
    SELECT count(*) AS n FROM task_instances WHERE run_id = $1 AND map_task = $2
    AND state IN ('queued', 'running', 'up_for_retry', 'up_for_reschedule') AND map_task IS NOT NULL`,
  /** The mapped task's row, locked: instances of one mapped task ending at once take turns here. */
  mapCounts: `
    SELECT state, try_number, max_tries, map_live, map_failing, map_total, map_max_active FROM task_instances
    WHERE run_id = $1 AND task_id = $2 FOR UPDATE`,
  /** A chained task's instances waiting for this instance (its key's upstream), with its state. */
  mapChainedChildren: `
    SELECT w.task_id, w.trigger_rule, u.task_id AS upstream, u.state AS upstream_state
    FROM task_instances w
    JOIN task_instances u ON u.run_id = w.run_id AND u.task_id = w.map_parent
    WHERE w.run_id = $1 AND w.map_parent = $2 AND w.state = 'scheduled' AND w.map_parent IS NOT NULL`,
  /** maxActive: an instance ended, so the first held one (by position) is queued. */
  mapReleaseHeld: `
    UPDATE task_instances SET state = 'queued', queued_at = $3
    WHERE run_id = $1 AND task_id = (
      SELECT task_id FROM task_instances
      WHERE run_id = $1 AND map_task = $2 AND state = 'scheduled' AND map_task IS NOT NULL
      ORDER BY map_position LIMIT 1 FOR UPDATE SKIP LOCKED)`,
  /**
   * maxActive over a task mapped by key (migration 34): a chained instance made eligible while
   * its mapped task has no free place waits, held (still 'scheduled', map_held_at set), and the
   * first held one by position is queued as an active one ends.
   */
  mapHold: `UPDATE task_instances SET map_held_at = $3 WHERE run_id = $1 AND task_id = ANY($2::text[]) AND state = 'scheduled'`,
  mapReleaseReady: `
    UPDATE task_instances SET state = 'queued', queued_at = $3, map_held_at = NULL
    WHERE run_id = $1 AND task_id = (
      SELECT task_id FROM task_instances
      WHERE run_id = $1 AND map_task = $2 AND state = 'scheduled' AND map_held_at IS NOT NULL
      ORDER BY map_position LIMIT 1 FOR UPDATE SKIP LOCKED)`,
  mapParentOf: `SELECT map_parent FROM task_instances WHERE run_id = $1 AND task_id = $2`,
  mapSettle: `
    UPDATE task_instances SET state = $3, reason = $4, ended_at = $5
    WHERE run_id = $1 AND task_id = $2 AND state = 'scheduled'`,
  /** A mapped task's first step: its attempt ends as a success; its task instance is then written by mapRecount. */
  endExpansionAttempt: `
    UPDATE attempts SET state = 'success', ended_at = $2, exit_code = $3, summary = $4, lease_expires_at = NULL
    WHERE attempt_id = $1`,
  pageMappedInstances: `
    SELECT i.task_id, i.map_key, i.map_position, i.map_item, i.state, i.try_number, i.reason, i.started_at, i.ended_at,
           (SELECT a.summary FROM attempts a WHERE a.run_id = i.run_id AND a.task_id = i.task_id AND a.state = 'success'
            ORDER BY a.try_number DESC LIMIT 1) AS summary
    FROM task_instances i
    WHERE i.run_id = $1 AND i.map_task = $2 AND i.map_key > $3
      AND ($4::text IS NULL OR starts_with(i.map_key, $4::text))
      AND ($5::text[] IS NULL OR i.state = ANY($5::text[]))
    ORDER BY i.map_key
    LIMIT $6`,
  /** Dataset events are numbered in commit order for readers; see lockDatasetEventsForRead. */
  lockDatasetEventsForWrite: `SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))`,
  lockDatasetEventsForRead: `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
  insertDatasetEvents: `
    INSERT INTO dataset_events (dataset, business_date, run_id, pipeline_id, task_id, trigger_kind, at)
    SELECT d, $2::text, $3::text, $4::text, $5::text, $6::text, $7::bigint FROM unnest($1::text[]) AS d`,
  /** The waiting children of a task that just settled, each with all its parents' states (run locked). */
  waitingChildrenWithParents: `
    SELECT w.task_id, w.trigger_rule, e.parent AS upstream, u.state AS upstream_state
    FROM task_edges c
    JOIN task_instances w ON w.run_id = $1 AND w.task_id = c.child AND w.state = 'scheduled' AND w.map_total IS NULL
    JOIN task_edges e ON e.graph_version = c.graph_version AND e.child = c.child
    JOIN task_instances u ON u.run_id = $1 AND u.task_id = e.parent
    WHERE c.graph_version = $2 AND c.parent = $3
    ORDER BY w.task_id`,
  /** Rerun: the reset tasks that wait, each with all its parents' states (run locked). */
  waitingTasksWithParents: `
    SELECT w.task_id, w.trigger_rule, e.parent AS upstream, u.state AS upstream_state
    FROM task_instances w
    LEFT JOIN task_edges e ON e.graph_version = $2 AND e.child = w.task_id
    LEFT JOIN task_instances u ON u.run_id = $1 AND u.task_id = e.parent
    WHERE w.run_id = $1 AND w.task_id = ANY($3::text[]) AND w.state = 'scheduled'`,
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
  /** Read after lockRun: the counts a concurrent finisher of this run committed (migration 17). */
  runProgress: `SELECT live_tasks > 0 AS live, failed_tasks > 0 AS failed FROM runs WHERE run_id = $1`,
  nextRetryAt: `
    SELECT min(next_try_at) AS at FROM task_instances
    WHERE run_id = $1 AND state IN ('up_for_retry', 'up_for_reschedule')`,
  /** Delivered to listeners when the transaction commits, and only then. */
  /** $2: the worker whose own call announces work for the others ('' for anyone's). */
  notifyWork: `SELECT pg_notify($1, $2)`,

  selectAttempts: `SELECT * FROM attempts WHERE run_id = $1 ORDER BY attempt_id`,
  selectAttemptsOfTask: `SELECT * FROM attempts WHERE run_id = $1 AND task_id = $2 ORDER BY attempt_id`,

  insertAudit: `
    INSERT INTO audit_log (at, actor, action, pipeline_id, run_id, task_id, reason, graph_version, details)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)
    RETURNING *`,
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
    SELECT $1::text, i.s, i.e, i.d, $2::text, $3::bigint FROM unnest($4::bigint[], $5::bigint[], $6::text[]) AS i(s, e, d)
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
    SELECT p.name, p.slots, NULL, $3::bigint FROM unnest($1::text[], $2::int[]) AS p(name, slots)
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
    SET state = 'lost', ended_at = $2, error_class = '${ErrorClass.LeaseExpired}', error_message = $3, lease_expires_at = NULL
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
  /** An outside producer's event: nothing when its key is known (the partial unique index of migration 22). */
  insertExternalDatasetEvent: `
    INSERT INTO dataset_events (dataset, business_date, at, source, actor, idempotency_key, summary)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (dataset, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING *`,
  selectDatasetEventByKey: `SELECT * FROM dataset_events WHERE dataset = $1 AND idempotency_key = $2`,
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

  // --- operator actions ---
  settleByHand: `
    UPDATE task_instances SET state = $3, reason = $4, ended_at = $5, next_try_at = NULL WHERE run_id = $1 AND task_id = $2`,
  /** Every child of a task, whatever its state: a hand-set state may reopen them (run locked). */
  lockChildren: `
    SELECT t.*
    FROM task_edges e JOIN task_instances t ON t.run_id = $1 AND t.task_id = e.child
    WHERE e.graph_version = $2 AND e.parent = $3
    ORDER BY t.task_id
    FOR UPDATE OF t`,

  // --- backfills ---
  insertBackfill: `
    INSERT INTO backfills (backfill_id, pipeline_id, state, from_date, to_date, reprocess, max_active_runs, backwards,
                           task_ids, actor, reason, graph_version, estimate, created_at, updated_at, code_choice)
    VALUES ($1, $2, 'running', $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12::jsonb, $13, $13, $14)`,
  /** Two identical requests at once: the second waits for the first's commit and then finds it. */
  lockBackfillRequests: `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
  selectBackfill: `SELECT * FROM backfills WHERE backfill_id = $1`,
  selectSameLiveBackfill: `
    SELECT * FROM backfills
    WHERE pipeline_id = $1 AND from_date = $2 AND to_date = $3 AND reprocess = $4
      AND coalesce(task_ids::text, '') = $5 AND state IN ('running', 'paused')`,
  selectBackfills: `SELECT * FROM backfills ORDER BY created_at DESC LIMIT $1`,
  selectBackfillsOf: `SELECT * FROM backfills WHERE pipeline_id = $1 ORDER BY created_at DESC LIMIT $2`,
  selectLiveBackfills: `SELECT * FROM backfills WHERE state IN ('running', 'paused') ORDER BY created_at`,
  insertBackfillItems: `
    INSERT INTO backfill_items (backfill_id, seq, business_date, interval_start, interval_end, action, why, run_id)
    SELECT $1::text, i.seq, i.business_date, i.interval_start, i.interval_end, i.action, i.why, i.run_id
    FROM unnest($2::int[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::text[], $8::text[])
      AS i(seq, business_date, interval_start, interval_end, action, why, run_id)`,
  selectBackfillItems: `SELECT * FROM backfill_items WHERE backfill_id = $1 ORDER BY seq`,
  selectPendingBackfillItems: `
    SELECT * FROM backfill_items
    WHERE backfill_id = $1 AND NOT started AND action IN ('create', 'rerun') ORDER BY seq LIMIT $2`,
  markBackfillItemStarted: `UPDATE backfill_items SET started = true WHERE backfill_id = $1 AND seq = $2`,
  countLiveBackfillRuns: `SELECT count(*) AS n FROM runs WHERE backfill_id = $1 AND state IN ('queued', 'running')`,
  backfillRunStates: `
    SELECT r.state, count(*) AS n
    FROM backfill_items i JOIN runs r ON r.run_id = i.run_id AND r.backfill_id = i.backfill_id
    WHERE i.backfill_id = $1 AND i.started
    GROUP BY r.state`,
  backfillItemCounts: `
    SELECT count(*) FILTER (WHERE action IN ('create', 'rerun')) AS planned,
           count(*) FILTER (WHERE action IN ('create', 'rerun') AND NOT started) AS not_started,
           count(*) FILTER (WHERE action IN ('leave', 'refuse')) AS untouched
    FROM backfill_items WHERE backfill_id = $1`,
  setBackfillState: `
    UPDATE backfills
    SET state = $2, updated_at = $3, ended_at = CASE WHEN $2 IN ('completed', 'failed', 'cancelled') THEN $3::bigint END
    WHERE backfill_id = $1
    RETURNING *`,
  selectLiveRunsOfBackfill: `
    SELECT run_id FROM runs WHERE backfill_id = $1 AND state IN ('queued', 'running') ORDER BY run_id`,
  skipWaitingOfRun: `
    UPDATE task_instances SET state = 'skipped', reason = $2, ended_at = $3, next_try_at = NULL
    WHERE run_id = $1 AND state IN ('scheduled', 'queued', 'up_for_retry', 'up_for_reschedule')`,
  /** The latest ended runs by the interval index, newest first, then each mapped task's row by its key. */
  mappedItemCounts: `
    SELECT t.task_id, t.map_total FROM (
      SELECT run_id, interval_start FROM runs WHERE pipeline_id = $1 AND state IN ('success', 'failed')
      ORDER BY interval_start DESC LIMIT $2) r
    JOIN task_instances t ON t.run_id = r.run_id AND t.task_id = ANY($3::text[])
    WHERE t.map_total IS NOT NULL
    ORDER BY r.interval_start DESC, t.task_id`,
  taskDurations: `
    SELECT task_id, ended_at - started_at AS ms FROM (
      SELECT a.task_id, a.started_at, a.ended_at,
             row_number() OVER (PARTITION BY a.task_id ORDER BY a.attempt_id DESC) AS n
      FROM attempts a JOIN runs r ON r.run_id = a.run_id
      WHERE r.pipeline_id = $1 AND a.state = 'success' AND a.ended_at IS NOT NULL
    ) latest WHERE n <= $2
    ORDER BY task_id, n`,

  // --- freshness, incidents, alerts ---
  upsertFreshness: `
    WITH published AS (
      SELECT p.dataset, p.empty_reason FROM unnest($1::text[], $2::text[]) AS p(dataset, empty_reason)
    ), history AS (
      INSERT INTO freshness_history (dataset, business_date, published_at, run_id, summary, empty_reason, trigger_kind)
      SELECT dataset, $3::text, $4::bigint, $6::text, $8::text, empty_reason, $9::text FROM published
    )
    INSERT INTO freshness (dataset, business_date, published_at, first_published_at, pipeline_id, run_id, task_id, summary, empty_reason)
    SELECT dataset, $3::text, $4::bigint, $4::bigint, $5::text, $6::text, $7::text, $8::text, empty_reason FROM published
    ON CONFLICT (dataset, business_date) DO UPDATE SET
      published_at = excluded.published_at, pipeline_id = excluded.pipeline_id, run_id = excluded.run_id,
      task_id = excluded.task_id, summary = excluded.summary, empty_reason = excluded.empty_reason`,
  selectFreshnessRange: `
    SELECT * FROM freshness WHERE dataset = $1 AND business_date >= $2 AND business_date <= $3 ORDER BY business_date`,
  selectFreshnessHistory: `SELECT * FROM freshness_history WHERE dataset = $1 AND business_date = $2 ORDER BY id`,
  insertIncident: `
    INSERT INTO incidents (incident_key, kind, dataset, pipeline_id, business_date, run_id, message, notify, opened_at, resolved_at, resolved_by, resolution)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12)
    ON CONFLICT DO NOTHING
    RETURNING *`,
  resolveIncident: `
    UPDATE incidents SET resolved_at = $2, resolved_by = $3, resolution = $4 WHERE incident_key = $1 AND resolved_at IS NULL
    RETURNING *`,
  acknowledgeIncident: `
    UPDATE incidents SET acknowledged_at = $2, acknowledged_by = $3, ack_reason = $4, ack_until = $5
    WHERE incident_key = $1 AND resolved_at IS NULL
    RETURNING *`,
  // The row a person's action is decided on, locked until the transaction ends.
  selectIncidentForUpdate: `SELECT * FROM incidents WHERE incident_key = $1 FOR UPDATE`,
  selectIncident: `SELECT * FROM incidents WHERE incident_key = $1`,
  // A promise exists since the first recorded graph version that has it (versions are few per pipeline).
  selectPromiseFirstSeen: `
    SELECT MIN(v.created_at) AS first_seen FROM pipeline_versions v, jsonb_array_elements(v.definition -> 'promises') p
    WHERE v.pipeline_id = $1 AND p ->> 'dataset' = $2`,
  selectOpenIncidents: `SELECT * FROM incidents WHERE resolved_at IS NULL ORDER BY opened_at DESC LIMIT $1`,
  selectIncidents: `SELECT * FROM incidents ORDER BY opened_at DESC LIMIT $1`,
  insertAlerts: `
    INSERT INTO alert_outbox (incident_key, event, notifier, payload, next_attempt_at, occasion)
    SELECT $1::text, $2::text, n, $4::jsonb, $5::bigint, $6::bigint FROM unnest($3::text[]) AS n
    ON CONFLICT DO NOTHING`,
  markIncidentReopened: `UPDATE incidents SET reopened_for = $2 WHERE incident_key = $1 RETURNING *`,
  selectDueAlerts: `
    SELECT * FROM alert_outbox WHERE delivered_at IS NULL AND next_attempt_at <= $1 ORDER BY next_attempt_at LIMIT $2`,
  alertDelivered: `UPDATE alert_outbox SET delivered_at = $2, tries = tries + 1, last_error = NULL WHERE id = $1`,
  alertFailed: `UPDATE alert_outbox SET tries = tries + 1, last_error = $2, next_attempt_at = $3 WHERE id = $1`,
  selectFailedRunsSince: `SELECT * FROM runs WHERE state = 'failed' AND ended_at >= $1 ORDER BY ended_at`,

  // --- watermarks ---
  selectWatermark: `SELECT value, kind FROM watermarks WHERE pipeline_id = $1 AND task_id = $2`,
  upsertWatermark: `
    INSERT INTO watermarks (pipeline_id, task_id, value, kind, updated_at) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (pipeline_id, task_id) DO UPDATE SET value = excluded.value, kind = excluded.kind, updated_at = excluded.updated_at`,
  // A live run whose instance of the task has not finished owns the watermark (the runs_live index).
  selectWatermarkOwner: `
    SELECT r.run_id FROM runs r JOIN task_instances ti ON ti.run_id = r.run_id AND ti.task_id = $1
    WHERE r.pipeline_id = $2 AND r.state IN ('queued', 'running')
      AND ti.state NOT IN ('success', 'failed', 'skipped', 'upstream_failed')
    ORDER BY r.run_id LIMIT 1`,

  // --- API tokens ---
  insertToken: `
    INSERT INTO api_tokens (token_hash, name, role, created_at, created_by) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT DO NOTHING RETURNING *`,
  selectLiveToken: `SELECT * FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL`,
  selectLiveTokens: `SELECT * FROM api_tokens WHERE revoked_at IS NULL ORDER BY name`,
  selectAllTokens: `SELECT * FROM api_tokens ORDER BY revoked_at IS NOT NULL, name, revoked_at DESC`,
  revokeToken: `UPDATE api_tokens SET revoked_at = $1, revoked_by = $2 WHERE name = $3 AND revoked_at IS NULL RETURNING *`,
  anyLiveToken: `SELECT EXISTS (SELECT 1 FROM api_tokens WHERE revoked_at IS NULL) AS found`,

  // --- the change feed ---
  selectChanges: `
    SELECT e.*, coalesce(r.pipeline_id, i.pipeline_id) AS pipeline_id, coalesce(r.business_date, i.business_date) AS business_date,
           i.kind AS incident_kind, i.dataset
    FROM change_events e
    LEFT JOIN runs r ON r.run_id = e.run_id
    LEFT JOIN incidents i ON i.incident_key = e.incident_key
    WHERE e.id > $1 ORDER BY e.id LIMIT $2`,
  // The sequence, not max(id): ids handed out to transactions still running count as issued.
  changeBounds: `
    SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM change_events_id_seq) AS newest,
           (SELECT min(id) FROM change_events) AS oldest`,

  // --- pages of history ---
  pageRuns: `
    SELECT * FROM runs
    WHERE pipeline_id = $1 AND interval_start < $2 AND interval_start >= $3
      AND ($4::text[] IS NULL OR state = ANY ($4))
      AND ($5::text[] IS NULL OR trigger_kind = ANY ($5))
    ORDER BY interval_start DESC LIMIT $6`,
  // The runs of one code version: its own statement, so the equality can seek runs_by_code_version.
  pageRunsOfCode: `
    SELECT * FROM runs
    WHERE pipeline_id = $1 AND code_version = $7 AND interval_start < $2 AND interval_start >= $3
      AND ($4::text[] IS NULL OR state = ANY ($4))
      AND ($5::text[] IS NULL OR trigger_kind = ANY ($5))
    ORDER BY interval_start DESC LIMIT $6`,
  taskInstancesOfRuns: `SELECT * FROM task_instances WHERE run_id = ANY ($1::text[]) ORDER BY run_id, task_id`,
  pageAudit: `
    SELECT * FROM audit_log
    WHERE id < $1 AND at >= $2 AND at < $3
      AND ($4::text IS NULL OR pipeline_id = $4)
      AND ($5::text IS NULL OR actor = $5)
      AND ($6::text IS NULL OR action = $6)
    ORDER BY id DESC LIMIT $7`,
  pageDatasetEvents: `
    SELECT * FROM dataset_events WHERE id < $1 AND ($2::text IS NULL OR dataset = $2) ORDER BY id DESC LIMIT $3`,
  pageIncidents: `
    SELECT * FROM incidents
    WHERE (opened_at, incident_key) < ($1, $2)
      AND ($3::boolean IS NULL OR (resolved_at IS NULL) = $3)
    ORDER BY opened_at DESC, incident_key DESC LIMIT $4`,
  selectWatermarks: `SELECT * FROM watermarks WHERE $1::text IS NULL OR pipeline_id = $1 ORDER BY pipeline_id, task_id`,

  // Frozen periods as last recorded: a compare-and-set, so that of several processes that see the
  // same change, one records it (and its audit entry) and the others find it already recorded. A
  // racing insert of the same scope waits for the first and then finds the WHERE false.
  selectRecordedFrozen: `SELECT * FROM frozen_periods WHERE scope = $1`,
  switchRecordedFrozen: `
    INSERT INTO frozen_periods (scope, periods, graph_version, recorded_at) VALUES ($1, $2, $3, $4)
    ON CONFLICT (scope) DO UPDATE SET periods = EXCLUDED.periods, graph_version = EXCLUDED.graph_version, recorded_at = EXCLUDED.recorded_at
    WHERE frozen_periods.periods = $5`,

  // --- alerts sent, a run's audit trail ---
  // Keyset over the outbox's primary key, newest first; the filters are checked on the way.
  pageAlerts: `
    SELECT a.id, a.incident_key, a.event, a.occasion, a.notifier, a.tries, a.next_attempt_at, a.delivered_at, a.last_error,
           i.kind, i.pipeline_id, i.dataset, i.business_date, i.message, i.opened_at, i.resolved_at
    FROM alert_outbox a JOIN incidents i ON i.incident_key = a.incident_key
    WHERE a.id < $1
      AND ($2::text IS NULL OR i.pipeline_id = $2)
      AND ($3::text IS NULL OR a.incident_key = $3)
      AND ($4::text IS NULL OR (CASE WHEN a.delivered_at IS NOT NULL THEN 'sent' WHEN a.tries > 0 THEN 'failed' ELSE 'queued' END) = $4)
    ORDER BY a.id DESC LIMIT $5`,
  auditOfRun: `
    SELECT * FROM audit_log WHERE run_id = $1 AND ($2::text[] IS NULL OR action = ANY($2)) ORDER BY id DESC LIMIT $3`,
  /** A mapped task is one cell, its own task instance: its instances (up to 100,000 a run) are paged by key instead. */
  taskStatesOfRuns: `
    SELECT run_id, task_id, state, try_number, map_total, map_in_scheduled, map_in_queued, map_in_running, map_in_success, map_in_failed, map_in_up_for_retry, map_in_up_for_reschedule, map_in_skipped, map_in_upstream_failed, map_in_removed
    FROM task_instances WHERE run_id = ANY($1::text[]) AND map_task IS NULL`,
  /** A run's page: its task instances, a mapped task's as one row with its counts, never its instances. */
  taskRowsOfRun: `SELECT * FROM task_instances WHERE run_id = $1 AND map_task IS NULL ORDER BY started_at IS NULL, started_at, task_id`,
  /** LATERAL keeps the order: the run's few task rows first, then each one's attempts by index. */
  attemptsOfTaskRows: `
    SELECT a.* FROM task_instances t CROSS JOIN LATERAL (
      SELECT * FROM attempts a WHERE a.run_id = t.run_id AND a.task_id = t.task_id) a
    WHERE t.run_id = $1 AND t.map_task IS NULL ORDER BY a.attempt_id`,

  // --- a worker's own path: leases renewed together, starts after a wait in its queue ---
  renewLeases: `
    UPDATE attempts SET lease_expires_at = $1
    WHERE attempt_id = ANY($2::bigint[]) AND worker_id = $3 AND state = 'running'
    RETURNING attempt_id`,
  /**
   * Sent after lockAttemptsForFinish, before the ends, fenced the same way: only the worker's own
   * running attempts. Each attempt by its primary key, the state checked on the row found (OFFSET
   * 0 keeps the check outside the scan: on the target, it would let the planner start from every
   * running row, the partial index, and compare each with the batch). The rows are locked by then,
   * so the check cannot go stale before the write.
   */
  recordStartedAt: `
    UPDATE attempts a SET started_at = f.started_at
    FROM (
      SELECT f.attempt_id, f.started_at
      FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS f(attempt_id, worker_id, started_at)
      CROSS JOIN LATERAL (SELECT x.state, x.worker_id FROM attempts x WHERE x.attempt_id = f.attempt_id OFFSET 0) x
      WHERE x.state = 'running' AND x.worker_id = f.worker_id
    ) f
    WHERE a.attempt_id = f.attempt_id`,

  // --- metrics: counts over the indexes of live rows, or a short range of recent intervals ---
  metricLiveRuns: `SELECT pipeline_id, state, count(*) AS n FROM runs WHERE state IN ('queued', 'running') GROUP BY pipeline_id, state`,
  metricRecentRuns: `
    SELECT pipeline_id, state, count(*) AS n FROM runs
    WHERE pipeline_id = ANY($1::text[]) AND state IN ('queued', 'running', 'success', 'failed') AND interval_start >= $2
    GROUP BY pipeline_id, state`,
  metricTaskInstancesOfLiveRuns: `
    SELECT r.pipeline_id, t.task_id, t.state, count(*) AS n
    FROM runs r JOIN task_instances t ON t.run_id = r.run_id
    WHERE r.state IN ('queued', 'running')
    GROUP BY r.pipeline_id, t.task_id, t.state`,
  metricQueuedByPool: `SELECT pool, count(*) AS n, min(queued_at) AS oldest FROM task_instances WHERE state = 'queued' GROUP BY pool`,
  metricOpenIncidents: `SELECT kind, pipeline_id, acknowledged_at IS NOT NULL AS acknowledged, ack_until, count(*) AS n FROM incidents WHERE resolved_at IS NULL GROUP BY kind, pipeline_id, acknowledged_at IS NOT NULL, ack_until`,
  // --- external jobs: fenced like a finish (running, this worker's, the current attempt) ---
  insertExternalJob: `
    INSERT INTO external_jobs (run_id, task_id, attempt_id, try_number, job_key, handle, adapter, link, state, submitted_at, held_pool, held_slots)
    SELECT a.run_id, a.task_id, a.attempt_id, a.try_number, $3, $4, $5, $6, 'open', $7,
           CASE WHEN $8::boolean THEN t.pool END, CASE WHEN $8::boolean AND t.pool IS NOT NULL THEN t.slots ELSE 0 END
    FROM attempts a JOIN task_instances t ON t.run_id = a.run_id AND t.task_id = a.task_id AND t.current_attempt_id = a.attempt_id
    WHERE a.attempt_id = $1 AND a.worker_id = $2 AND a.state = 'running'
    ON CONFLICT DO NOTHING
    RETURNING job_id`,
  selectExternalJob: `SELECT j.*, r.pipeline_id FROM external_jobs j JOIN runs r ON r.run_id = j.run_id WHERE j.job_id = $1`,
  selectLiveExternalJob: `
    SELECT j.*, r.pipeline_id, (SELECT count(*) FROM external_jobs c WHERE c.run_id = $1 AND c.task_id = $2)::int AS submissions
    FROM runs r LEFT JOIN external_jobs j ON j.run_id = r.run_id AND j.task_id = $2 AND j.state IN ('open', 'cancel_requested')
    WHERE r.run_id = $1`,
  listExternalJobs: `
    SELECT j.*, r.pipeline_id FROM external_jobs j JOIN runs r ON r.run_id = j.run_id
    WHERE j.run_id = $1 AND ($2::text IS NULL OR j.task_id = $2) ORDER BY j.job_id`,
  endExternalJobByAttempt: `
    UPDATE external_jobs SET state = $2, ended_at = $3, note = $4
    WHERE job_id = $1 AND state IN ('open', 'cancel_requested')
      AND EXISTS (SELECT 1 FROM attempts a JOIN task_instances t
                    ON t.run_id = a.run_id AND t.task_id = a.task_id AND t.current_attempt_id = a.attempt_id
                  WHERE a.attempt_id = $5 AND a.worker_id = $6 AND a.state = 'running'
                    AND a.run_id = external_jobs.run_id AND a.task_id = external_jobs.task_id)`,
  endRequestedExternalJob: `
    UPDATE external_jobs SET state = $2, ended_at = $3, note = coalesce($4, note)
    WHERE job_id = $1 AND state = 'cancel_requested'`,
  // A job is to be cancelled once its task instance no longer waits on it: not running an attempt,
  // not between polls, not waiting for a retry that will reattach (a lost attempt).
  requestExternalCancels: `
    UPDATE external_jobs SET state = 'cancel_requested', note = $2
    WHERE run_id = $1 AND state = 'open'
      AND NOT EXISTS (SELECT 1 FROM task_instances t WHERE t.run_id = external_jobs.run_id AND t.task_id = external_jobs.task_id
                        AND t.state IN ('running', 'up_for_reschedule', 'up_for_retry'))`,
  externalJobsToCancel: `
    SELECT j.*, r.pipeline_id FROM external_jobs j JOIN runs r ON r.run_id = j.run_id
    WHERE j.state = 'cancel_requested' AND r.pipeline_id = ANY($1::text[])
    ORDER BY j.job_id LIMIT $2`,
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
  backfillRequests: (schema: string, pipelineId: string) => `idem:${schema}:backfill:${pipelineId}`,
  channel: (schema: string) => `idem_work_${schema}`.slice(0, 63),
  /** Where the change feed's trigger notifies (migration 6 builds the same name from the table's schema). */
  changes: (schema: string) => `idem_changes_${schema}`.slice(0, 63),
  /** Where the scheduler's triggers notify (migration 16 builds the same name from the table's schema). */
  scheduling: (schema: string) => `idem_scheduler_${schema}`.slice(0, 63),
} as const;

/**
 * `idem migrate`: copying a SQLite installation's history into PostgreSQL. Tables are copied
 * column for column (the schemas mirror each other); ids are kept, so references between rows
 * (an attempt of a task instance, a dataset event a cursor points at) stay true, and the
 * identity sequences are moved past them afterwards.
 */
export const STATE_COPY = {
  /** Copied, in this order. Live-process rows (workers, the leader lease) are not history. */
  tables: [
    "pipeline_versions", "task_edges", "pipelines", "runs", "task_instances", "attempts", "audit_log",
    "skipped_intervals", "pools", "dataset_events", "dataset_waits", "backfills", "backfill_items",
    "freshness", "freshness_history", "incidents", "alert_outbox", "watermarks", "api_tokens", "frozen_periods", "code_versions",
  ],
  /** Emptied before a forced copy: every table of the target's state. */
  cleared: [
    "pipeline_versions", "task_edges", "pipelines", "runs", "task_instances", "attempts", "audit_log",
    "skipped_intervals", "pools", "dataset_events", "dataset_waits", "backfills", "backfill_items",
    "freshness", "freshness_history", "incidents", "alert_outbox", "watermarks", "workers", "leases",
    "api_tokens", "change_events", "frozen_periods", "code_versions",
  ],
  /** The change feed's triggers stand aside: copied history is not a change anybody watches. */
  quietFeed: `SET LOCAL idem.copying = 'on'`,
  /** What the SQLite side reads (migration 16 gave its task instances their from_backfill flag too). */
  sourceRows: (table: string) => `SELECT * FROM ${table}`,
  sourceHasTable: `SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`,
  targetColumns: `
    SELECT table_name, column_name, data_type FROM information_schema.columns
    WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
  targetRowCount: (table: string) => `SELECT count(*) AS n FROM ${table}`,
  clear: (tables: readonly string[]) => `TRUNCATE ${tables.join(", ")} RESTART IDENTITY`,
  insert: (table: string, columns: readonly { name: string; cast: string }[], rows: number) => {
    const values: string[] = [];
    for (let r = 0; r < rows; r++) {
      values.push(`(${columns.map((c, i) => `$${r * columns.length + i + 1}${c.cast}`).join(", ")})`);
    }
    return `INSERT INTO ${table} (${columns.map((c) => c.name).join(", ")}) VALUES ${values.join(", ")}`;
  },
  /** Identity columns continue after the copied ids. */
  identities: [
    { table: "attempts", column: "attempt_id" },
    { table: "audit_log", column: "id" },
    { table: "dataset_events", column: "id" },
    { table: "freshness_history", column: "id" },
    { table: "alert_outbox", column: "id" },
  ],
  advanceIdentity: (table: string, column: string) =>
    `SELECT setval(pg_get_serial_sequence('${table}', '${column}'), coalesce((SELECT max(${column}) FROM ${table}), 0) + 1, false)`,
} as const;
