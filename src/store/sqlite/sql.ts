/** Every SQL statement of the SQLite adapter, in one place. Each is prepared once. */
export const SQL = {
  insertPipelineVersion: `
    INSERT INTO pipeline_versions (pipeline_id, version, definition, created_at)
    VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  insertEdge: `INSERT INTO task_edges (graph_version, parent, child) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
  selectPipelineVersion: `SELECT * FROM pipeline_versions WHERE pipeline_id = ? AND version = ?`,

  insertRun: `
    INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind,
                      triggered_by, reason, graph_version, params, created_at)
    VALUES (@runId, @pipelineId, @intervalStart, @intervalEnd, @businessDate, 'queued', @trigger,
            @triggeredBy, @reason, @graphVersion, @params, @createdAt)
    ON CONFLICT DO NOTHING`,
  selectRun: `SELECT * FROM runs WHERE run_id = ?`,
  selectRunByInterval: `SELECT * FROM runs WHERE pipeline_id = ? AND interval_start = ? AND interval_end = ?`,
  selectRunsOfPipeline: `SELECT * FROM runs WHERE pipeline_id = ? ORDER BY interval_start DESC LIMIT ?`,
  selectRuns: `SELECT * FROM runs ORDER BY created_at DESC LIMIT ?`,
  markRunRunning: `UPDATE runs SET state = 'running', started_at = coalesce(started_at, ?) WHERE run_id = ? AND state = 'queued'`,
  finishRun: `UPDATE runs SET state = ?, ended_at = ? WHERE run_id = ?`,
  requeueRun: `
    UPDATE runs SET state = 'queued', ended_at = NULL, started_at = NULL, graph_version = ?, params = ?
    WHERE run_id = ?`,

  insertTaskInstance: `
    INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, pool, slots, priority, queued_at)
    VALUES (@runId, @taskId, @state, @maxTries, @triggerRule, @pool, @slots, @priority, @queuedAt)`,
  selectTaskInstances: `SELECT * FROM task_instances WHERE run_id = ? ORDER BY started_at IS NULL, started_at, task_id`,
  selectTaskInstance: `SELECT * FROM task_instances WHERE run_id = ? AND task_id = ?`,
  deleteTaskInstance: `DELETE FROM task_instances WHERE run_id = ? AND task_id = ?`,
  countRunning: `SELECT count(*) AS n FROM task_instances WHERE run_id = ? AND state = 'running'`,
  resetTaskInstance: `
    UPDATE task_instances
    SET state = 'scheduled', max_tries = try_number + @maxTries, next_try_at = NULL, reason = NULL,
        trigger_rule = @triggerRule, pool = @pool, slots = @slots, priority = @priority,
        current_attempt_id = NULL, queued_at = NULL, started_at = NULL, ended_at = NULL
    WHERE run_id = @runId AND task_id = @taskId`,

  selectClaimableInRun: `
    SELECT t.run_id, t.task_id, t.try_number, t.max_tries
    FROM task_instances t
    WHERE t.run_id = ?
      AND (t.state = 'queued' OR (t.state IN ('up_for_retry', 'up_for_reschedule') AND t.next_try_at <= ?))
    ORDER BY t.priority DESC, t.queued_at, t.task_id
    LIMIT ?`,
  selectClaimableQueued: `
    SELECT run_id, task_id, try_number, max_tries FROM task_instances
    WHERE state = 'queued' ORDER BY priority DESC, queued_at LIMIT ?`,
  selectClaimableWaiting: `
    SELECT run_id, task_id, try_number, max_tries FROM task_instances
    WHERE state IN ('up_for_retry', 'up_for_reschedule') AND next_try_at <= ? ORDER BY next_try_at LIMIT ?`,
  startTaskInstance: `
    UPDATE task_instances
    SET state = 'running', try_number = try_number + 1, current_attempt_id = ?, next_try_at = NULL,
        started_at = coalesce(started_at, ?)
    WHERE run_id = ? AND task_id = ?`,
  insertAttempt: `
    INSERT INTO attempts (run_id, task_id, try_number, state, worker_id, pid, started_at, lease_expires_at, log_path)
    VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)`,
  renewLease: `
    UPDATE attempts SET lease_expires_at = ? WHERE attempt_id = ? AND worker_id = ? AND state = 'running'`,

  selectAttemptForFinish: `
    SELECT a.run_id, a.task_id, a.state, a.worker_id, t.state AS ti_state, t.current_attempt_id,
           t.try_number, t.max_tries, r.graph_version
    FROM attempts a
    JOIN task_instances t ON t.run_id = a.run_id AND t.task_id = a.task_id
    JOIN runs r ON r.run_id = a.run_id
    WHERE a.attempt_id = ?`,
  finishAttempt: `
    UPDATE attempts
    SET state = @state, ended_at = @now, exit_code = @exitCode, error_class = @errorClass,
        error_message = @errorMessage, summary = @summary, lease_expires_at = NULL
    WHERE attempt_id = @attemptId`,
  setTaskState: `
    UPDATE task_instances SET state = @state, next_try_at = @nextTryAt, reason = @reason, ended_at = @endedAt
    WHERE run_id = @runId AND task_id = @taskId`,
  queueTaskInstance: `
    UPDATE task_instances SET state = 'queued', queued_at = ? WHERE run_id = ? AND task_id = ? AND state = 'scheduled'`,
  settleTaskInstance: `
    UPDATE task_instances SET state = ?, reason = ?, ended_at = ? WHERE run_id = ? AND task_id = ? AND state = 'scheduled'`,
  selectChildren: `SELECT child FROM task_edges WHERE graph_version = ? AND parent = ?`,
  selectUpstreamStates: `
    SELECT t.state AS state, count(*) AS n
    FROM task_edges e JOIN task_instances t ON t.run_id = ? AND t.task_id = e.parent
    WHERE e.graph_version = ? AND e.child = ?
    GROUP BY t.state`,
  countLiveInRun: `
    SELECT count(*) AS n FROM task_instances
    WHERE run_id = ? AND state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule')`,
  countFailedInRun: `
    SELECT count(*) AS n FROM task_instances WHERE run_id = ? AND state IN ('failed', 'upstream_failed')`,
  nextRetryAt: `
    SELECT min(next_try_at) AS at FROM task_instances
    WHERE run_id = ? AND state IN ('up_for_retry', 'up_for_reschedule')`,

  selectAttempts: `SELECT * FROM attempts WHERE run_id = ? ORDER BY attempt_id`,
  selectAttemptsOfTask: `SELECT * FROM attempts WHERE run_id = ? AND task_id = ? ORDER BY attempt_id`,

  insertAudit: `
    INSERT INTO audit_log (at, actor, action, pipeline_id, run_id, task_id, reason, graph_version, details)
    VALUES (@at, @actor, @action, @pipelineId, @runId, @taskId, @reason, @graphVersion, @details)`,
  selectAudit: `SELECT * FROM audit_log ORDER BY id DESC LIMIT ?`,
  selectAuditOfPipeline: `SELECT * FROM audit_log WHERE pipeline_id = ? ORDER BY id DESC LIMIT ?`,
} as const;
