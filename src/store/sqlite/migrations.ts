/**
 * Versioned schema. A migration is never edited once released; add a new one instead.
 * Partial indexes cover live states only, so claiming and finishing cost the same with a
 * million finished task instances as with none.
 */
export const MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: "runs, task instances, attempts, audit",
    sql: `
      CREATE TABLE pipeline_versions (
        pipeline_id TEXT NOT NULL,
        version     TEXT NOT NULL,
        definition  TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        PRIMARY KEY (pipeline_id, version)
      );
      CREATE TABLE task_edges (
        graph_version TEXT NOT NULL,
        parent        TEXT NOT NULL,
        child         TEXT NOT NULL,
        PRIMARY KEY (graph_version, parent, child)
      ) WITHOUT ROWID;
      CREATE INDEX task_edges_by_child ON task_edges (graph_version, child, parent);

      CREATE TABLE runs (
        run_id         TEXT PRIMARY KEY,
        pipeline_id    TEXT NOT NULL,
        interval_start INTEGER NOT NULL,
        interval_end   INTEGER NOT NULL,
        business_date  TEXT NOT NULL,
        state          TEXT NOT NULL,
        trigger_kind   TEXT NOT NULL,
        triggered_by   TEXT,
        reason         TEXT,
        graph_version  TEXT NOT NULL,
        params         TEXT NOT NULL DEFAULT '{}',
        created_at     INTEGER NOT NULL,
        started_at     INTEGER,
        ended_at       INTEGER,
        UNIQUE (pipeline_id, interval_start, interval_end)
      );
      CREATE INDEX runs_live ON runs (pipeline_id, state) WHERE state IN ('queued', 'running');

      CREATE TABLE task_instances (
        run_id             TEXT NOT NULL,
        task_id            TEXT NOT NULL,
        state              TEXT NOT NULL,
        try_number         INTEGER NOT NULL DEFAULT 0,
        max_tries          INTEGER NOT NULL,
        next_try_at        INTEGER,
        trigger_rule       TEXT NOT NULL,
        pool               TEXT,
        slots              INTEGER NOT NULL DEFAULT 1,
        priority           INTEGER NOT NULL DEFAULT 0,
        reason             TEXT,
        current_attempt_id INTEGER,
        queued_at          INTEGER,
        started_at         INTEGER,
        ended_at           INTEGER,
        PRIMARY KEY (run_id, task_id)
      ) WITHOUT ROWID;
      CREATE INDEX task_instances_queued ON task_instances (priority DESC, queued_at)
        WHERE state = 'queued';
      CREATE INDEX task_instances_waiting ON task_instances (next_try_at)
        WHERE state IN ('up_for_retry', 'up_for_reschedule');
      CREATE INDEX task_instances_live_by_run ON task_instances (run_id)
        WHERE state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule');

      CREATE TABLE attempts (
        attempt_id       INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id           TEXT NOT NULL,
        task_id          TEXT NOT NULL,
        try_number       INTEGER NOT NULL,
        state            TEXT NOT NULL,
        worker_id        TEXT NOT NULL,
        pid              INTEGER,
        started_at       INTEGER NOT NULL,
        ended_at         INTEGER,
        lease_expires_at INTEGER,
        exit_code        INTEGER,
        error_class      TEXT,
        error_message    TEXT,
        log_path         TEXT NOT NULL,
        summary          TEXT
      );
      CREATE INDEX attempts_by_task ON attempts (run_id, task_id, try_number);
      CREATE INDEX attempts_running ON attempts (lease_expires_at) WHERE state = 'running';

      CREATE TABLE audit_log (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        at            INTEGER NOT NULL,
        actor         TEXT NOT NULL,
        action        TEXT NOT NULL,
        pipeline_id   TEXT,
        run_id        TEXT,
        task_id       TEXT,
        reason        TEXT,
        graph_version TEXT,
        details       TEXT NOT NULL DEFAULT '{}'
      );
      CREATE INDEX audit_log_by_pipeline ON audit_log (pipeline_id, id);
    `,
  },
  {
    version: 2,
    name: "scheduling: pipelines, ledger skips, pools, workers, leadership, datasets",
    sql: `
      CREATE TABLE pipelines (
        pipeline_id    TEXT PRIMARY KEY,
        paused         INTEGER NOT NULL DEFAULT 0,
        paused_note    TEXT,
        paused_by      TEXT,
        paused_at      INTEGER,
        -- end of the last scheduled interval accounted for (a run created, or skipped by policy)
        schedule_cursor INTEGER,
        -- id of the last dataset event read for data-triggered pipelines
        event_cursor   INTEGER NOT NULL DEFAULT 0,
        created_at     INTEGER NOT NULL
      );
      CREATE TABLE skipped_intervals (
        pipeline_id    TEXT NOT NULL,
        interval_start INTEGER NOT NULL,
        interval_end   INTEGER NOT NULL,
        business_date  TEXT NOT NULL,
        reason         TEXT NOT NULL,
        at             INTEGER NOT NULL,
        PRIMARY KEY (pipeline_id, interval_start, interval_end)
      ) WITHOUT ROWID;
      CREATE INDEX runs_by_interval ON runs (pipeline_id, interval_start);

      CREATE TABLE pools (
        name        TEXT PRIMARY KEY,
        slots       INTEGER NOT NULL,
        description TEXT,
        updated_at  INTEGER NOT NULL
      );
      CREATE INDEX task_instances_running_pool ON task_instances (pool) WHERE state = 'running';
      CREATE INDEX task_instances_running_run ON task_instances (run_id) WHERE state = 'running';

      CREATE TABLE workers (
        worker_id   TEXT PRIMARY KEY,
        host        TEXT NOT NULL,
        pid         INTEGER NOT NULL,
        concurrency INTEGER NOT NULL,
        started_at  INTEGER NOT NULL,
        last_seen   INTEGER NOT NULL
      );
      CREATE TABLE leases (
        role       TEXT PRIMARY KEY,
        holder     TEXT NOT NULL,
        term       INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        renewed_at INTEGER NOT NULL
      );

      CREATE TABLE dataset_events (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        dataset       TEXT NOT NULL,
        business_date TEXT NOT NULL,
        run_id        TEXT NOT NULL,
        pipeline_id   TEXT NOT NULL,
        task_id       TEXT NOT NULL,
        trigger_kind  TEXT NOT NULL,
        at            INTEGER NOT NULL
      );
      CREATE INDEX dataset_events_by_dataset ON dataset_events (dataset, id);
      CREATE TABLE dataset_waits (
        pipeline_id   TEXT NOT NULL,
        business_date TEXT NOT NULL,
        dataset       TEXT NOT NULL,
        event_id      INTEGER NOT NULL,
        PRIMARY KEY (pipeline_id, business_date, dataset)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 3,
    name: "backfills",
    sql: `
      CREATE TABLE backfills (
        backfill_id     TEXT PRIMARY KEY,
        pipeline_id     TEXT NOT NULL,
        state           TEXT NOT NULL,
        from_date       TEXT NOT NULL,
        to_date         TEXT NOT NULL,
        reprocess       TEXT NOT NULL,
        max_active_runs INTEGER NOT NULL,
        backwards       INTEGER NOT NULL,
        task_ids        TEXT,
        actor           TEXT NOT NULL,
        reason          TEXT NOT NULL,
        graph_version   TEXT NOT NULL,
        estimate        TEXT NOT NULL DEFAULT '{}',
        created_at      INTEGER NOT NULL,
        updated_at      INTEGER NOT NULL,
        ended_at        INTEGER
      );
      CREATE INDEX backfills_live ON backfills (state) WHERE state IN ('running', 'paused');
      CREATE TABLE backfill_items (
        backfill_id    TEXT NOT NULL,
        seq            INTEGER NOT NULL,
        business_date  TEXT NOT NULL,
        interval_start INTEGER NOT NULL,
        interval_end   INTEGER NOT NULL,
        action         TEXT NOT NULL,
        why            TEXT NOT NULL,
        run_id         TEXT NOT NULL,
        started        INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (backfill_id, seq)
      ) WITHOUT ROWID;
      CREATE INDEX backfill_items_pending ON backfill_items (backfill_id, seq)
        WHERE started = 0 AND action IN ('create', 'rerun');
      ALTER TABLE runs ADD COLUMN backfill_id TEXT;
      CREATE INDEX runs_by_backfill ON runs (backfill_id, state) WHERE backfill_id IS NOT NULL;
    `,
  },
  {
    version: 4,
    name: "freshness promises, incidents and the alert outbox",
    sql: `
      CREATE TABLE freshness (
        dataset            TEXT NOT NULL,
        business_date      TEXT NOT NULL,
        published_at       INTEGER NOT NULL,
        first_published_at INTEGER NOT NULL,
        pipeline_id        TEXT NOT NULL,
        run_id             TEXT NOT NULL,
        task_id            TEXT NOT NULL,
        summary            TEXT,
        empty_reason       TEXT,
        PRIMARY KEY (dataset, business_date)
      ) WITHOUT ROWID;
      CREATE TABLE freshness_history (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        dataset       TEXT NOT NULL,
        business_date TEXT NOT NULL,
        published_at  INTEGER NOT NULL,
        run_id        TEXT NOT NULL,
        summary       TEXT,
        empty_reason  TEXT
      );
      CREATE INDEX freshness_history_by_day ON freshness_history (dataset, business_date, id);

      CREATE TABLE incidents (
        incident_key  TEXT PRIMARY KEY,
        kind          TEXT NOT NULL,
        dataset       TEXT,
        pipeline_id   TEXT,
        business_date TEXT,
        run_id        TEXT,
        message       TEXT NOT NULL,
        notify        TEXT NOT NULL DEFAULT '[]',
        opened_at     INTEGER NOT NULL,
        resolved_at   INTEGER,
        resolution    TEXT
      );
      CREATE INDEX incidents_open ON incidents (opened_at) WHERE resolved_at IS NULL;

      CREATE TABLE alert_outbox (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        incident_key    TEXT NOT NULL,
        event           TEXT NOT NULL,
        notifier        TEXT NOT NULL,
        payload         TEXT NOT NULL,
        tries           INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        delivered_at    INTEGER,
        last_error      TEXT,
        UNIQUE (incident_key, event, notifier)
      );
      CREATE INDEX alert_outbox_due ON alert_outbox (next_attempt_at) WHERE delivered_at IS NULL;

      CREATE INDEX runs_failed_recently ON runs (ended_at) WHERE state = 'failed';
    `,
  },
  {
    version: 5,
    name: "watermarks of incremental loads",
    sql: `
      CREATE TABLE watermarks (
        pipeline_id TEXT NOT NULL,
        task_id     TEXT NOT NULL,
        value       TEXT NOT NULL,
        kind        TEXT NOT NULL,
        updated_at  INTEGER NOT NULL,
        PRIMARY KEY (pipeline_id, task_id)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 6,
    name: "API tokens; the change feed (runs, task instances, incidents); indexes for pages of history",
    sql: `
      -- Only the SHA-256 of a token is kept: the secret itself is shown once, at creation.
      CREATE TABLE api_tokens (
        token_hash TEXT PRIMARY KEY,
        name       TEXT NOT NULL,
        role       TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        created_by TEXT NOT NULL,
        revoked_at INTEGER,
        revoked_by TEXT
      ) WITHOUT ROWID;
      CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;

      -- The change feed behind /api/v1/events. Triggers write it in the same transaction as the
      -- change itself, so no adapter method can forget to, and a reader that remembers the last id
      -- it saw misses nothing. AUTOINCREMENT: ids only grow, even after the oldest rows are pruned.
      CREATE TABLE change_events (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        kind         TEXT NOT NULL,
        run_id       TEXT,
        task_id      TEXT,
        state        TEXT NOT NULL,
        try_number   INTEGER,
        incident_key TEXT
      );
      CREATE TRIGGER change_feed_run_created AFTER INSERT ON runs BEGIN
        INSERT INTO change_events (kind, run_id, state) VALUES ('run', NEW.run_id, NEW.state);
      END;
      CREATE TRIGGER change_feed_run_state AFTER UPDATE OF state ON runs WHEN OLD.state IS NOT NEW.state BEGIN
        INSERT INTO change_events (kind, run_id, state) VALUES ('run', NEW.run_id, NEW.state);
      END;
      CREATE TRIGGER change_feed_task_state AFTER UPDATE OF state, try_number ON task_instances
        WHEN OLD.state IS NOT NEW.state OR OLD.try_number IS NOT NEW.try_number BEGIN
        INSERT INTO change_events (kind, run_id, task_id, state, try_number)
        VALUES ('task', NEW.run_id, NEW.task_id, NEW.state, NEW.try_number);
      END;
      CREATE TRIGGER change_feed_incident_opened AFTER INSERT ON incidents BEGIN
        INSERT INTO change_events (kind, state, incident_key) VALUES ('incident', 'open', NEW.incident_key);
      END;
      CREATE TRIGGER change_feed_incident_resolved AFTER UPDATE OF resolved_at ON incidents
        WHEN OLD.resolved_at IS NULL AND NEW.resolved_at IS NOT NULL BEGIN
        INSERT INTO change_events (kind, state, incident_key) VALUES ('incident', 'resolved', NEW.incident_key);
      END;
      -- Bounded retention: every 1024th change drops what is 100,000 changes old (one range delete).
      CREATE TRIGGER change_feed_retention AFTER INSERT ON change_events WHEN NEW.id % 1024 = 0 BEGIN
        DELETE FROM change_events WHERE id <= NEW.id - 100000;
      END;

      CREATE INDEX audit_log_by_actor ON audit_log (actor, id);
      CREATE INDEX audit_log_by_action ON audit_log (action, id);
      CREATE INDEX incidents_by_opened ON incidents (opened_at);
      CREATE INDEX runs_by_state ON runs (pipeline_id, state, interval_start);
    `,
  },
  {
    version: 10,
    name: "restatements: restate counts on runs, the trigger of each publication",
    sql: `
      ALTER TABLE runs ADD COLUMN restate_count INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE runs ADD COLUMN restated_at INTEGER;
      ALTER TABLE runs ADD COLUMN restate_note TEXT;
      -- the head interval (its start) the note is about, so a refusal is recorded once per head
      ALTER TABLE runs ADD COLUMN restate_note_for INTEGER;
      ALTER TABLE freshness_history ADD COLUMN trigger_kind TEXT;
    `,
  },
  {
    version: 11,
    name: "a run's audit trail by run (the run page's restatement history)",
    sql: `
      CREATE INDEX audit_log_by_run ON audit_log (run_id, id);
    `,
  },
  {
    version: 14,
    name: "frozen periods as last recorded, per pipeline and for the project",
    sql: `
      -- scope: a pipeline id, or '*' for the project's periods; periods: the canonical JSON text
      CREATE TABLE frozen_periods (
        scope         TEXT PRIMARY KEY,
        periods       TEXT NOT NULL,
        graph_version TEXT,
        recorded_at   INTEGER NOT NULL
      );
    `,
  },
  {
    version: 16,
    name: "claim order on the queued row: a background-work flag (backfill or restatement) in the claim indexes",
    sql: `
      -- The claim order starts with "live runs before backfills and restatements", a fact of the
      -- run. Kept on the task instance (as PostgreSQL does) so that the claim reads its partial
      -- index in order and stops at LIMIT, instead of joining every queued row to its run and
      -- sorting them all in a temporary B-tree. Triggers keep it true whichever statement inserts
      -- task instances or moves a run into a backfill or a restatement.
      ALTER TABLE task_instances ADD COLUMN from_backfill INTEGER NOT NULL DEFAULT 0;
      UPDATE task_instances SET from_backfill = 1
        WHERE run_id IN (SELECT run_id FROM runs WHERE backfill_id IS NOT NULL OR trigger_kind = 'restate');
      CREATE TRIGGER task_instances_from_backfill AFTER INSERT ON task_instances
        WHEN EXISTS (SELECT 1 FROM runs WHERE run_id = NEW.run_id AND (backfill_id IS NOT NULL OR trigger_kind = 'restate'))
      BEGIN
        UPDATE task_instances SET from_backfill = 1 WHERE run_id = NEW.run_id AND task_id = NEW.task_id;
      END;
      CREATE TRIGGER runs_from_backfill AFTER UPDATE OF backfill_id, trigger_kind ON runs
        WHEN (OLD.backfill_id IS NOT NULL OR OLD.trigger_kind = 'restate') IS NOT (NEW.backfill_id IS NOT NULL OR NEW.trigger_kind = 'restate')
      BEGIN
        UPDATE task_instances SET from_backfill = (NEW.backfill_id IS NOT NULL OR NEW.trigger_kind = 'restate') WHERE run_id = NEW.run_id;
      END;
      DROP INDEX task_instances_queued;
      CREATE INDEX task_instances_queued ON task_instances (from_backfill, priority DESC, queued_at, task_id)
        WHERE state = 'queued';
      DROP INDEX task_instances_waiting;
      CREATE INDEX task_instances_waiting ON task_instances (from_backfill, next_try_at)
        WHERE state IN ('up_for_retry', 'up_for_reschedule');
    `,
  },
  {
    version: 17,
    name: "per-run counts of live and failing task instances; claims of one run read an index in order",
    sql: `
      -- "Is anything in this run live, did anything fail?" is asked by every finish. Answered by
      -- probing task_instances it read the run's rows in key order up to the first live one:
      -- every finished row first, so one run of N tasks cost O(N^2). Counted instead, by
      -- triggers (no statement that changes a task instance can forget), in the changing
      -- transaction. The state sets are core's LIVE_TASK_STATES and FAILING_TASK_STATES as of
      -- this migration (test/store/run-counts.test.ts checks they still agree).
      ALTER TABLE runs ADD COLUMN live_tasks INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE runs ADD COLUMN failed_tasks INTEGER NOT NULL DEFAULT 0;
      UPDATE runs SET
        live_tasks = (SELECT count(*) FROM task_instances t WHERE t.run_id = runs.run_id AND t.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule')),
        failed_tasks = (SELECT count(*) FROM task_instances t WHERE t.run_id = runs.run_id AND t.state IN ('failed', 'upstream_failed'));
      CREATE TRIGGER run_counts_inserted AFTER INSERT ON task_instances
        WHEN NEW.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule') OR NEW.state IN ('failed', 'upstream_failed')
      BEGIN
        UPDATE runs SET live_tasks = live_tasks + (NEW.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule')), failed_tasks = failed_tasks + (NEW.state IN ('failed', 'upstream_failed'))
        WHERE run_id = NEW.run_id;
      END;
      CREATE TRIGGER run_counts_deleted AFTER DELETE ON task_instances
        WHEN OLD.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule') OR OLD.state IN ('failed', 'upstream_failed')
      BEGIN
        UPDATE runs SET live_tasks = live_tasks - (OLD.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule')), failed_tasks = failed_tasks - (OLD.state IN ('failed', 'upstream_failed'))
        WHERE run_id = OLD.run_id;
      END;
      CREATE TRIGGER run_counts_changed AFTER UPDATE OF state ON task_instances
        WHEN (OLD.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule')) IS NOT (NEW.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule')) OR (OLD.state IN ('failed', 'upstream_failed')) IS NOT (NEW.state IN ('failed', 'upstream_failed'))
      BEGIN
        UPDATE runs SET live_tasks = live_tasks + (NEW.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule')) - (OLD.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule')),
                        failed_tasks = failed_tasks + (NEW.state IN ('failed', 'upstream_failed')) - (OLD.state IN ('failed', 'upstream_failed'))
        WHERE run_id = NEW.run_id;
      END;
      -- A claim scoped to one run (idem run) read and sorted all of the run's rows.
      CREATE INDEX task_instances_queued_by_run ON task_instances (run_id, priority DESC, queued_at, task_id)
        WHERE state = 'queued';
      CREATE INDEX task_instances_waiting_by_run ON task_instances (run_id, next_try_at)
        WHERE state IN ('up_for_retry', 'up_for_reschedule');
    `,
  },
  {
    version: 18,
    name: "error classes as a closed set: an exception's own name moves from the class to the message",
    sql: `
      -- Attempts used to record an exception thrown by task code under its own name ("TypeError",
      -- a driver's error). The classes are now idem's closed set (core/model/error-classes.ts, as
      -- of this version: frozen here); such an attempt is TaskFailed, the name at the head of its
      -- message, as new attempts are recorded. "Error" says nothing and is dropped.
      UPDATE attempts
      SET error_message = CASE WHEN error_class = 'Error' THEN error_message ELSE error_class || COALESCE(': ' || error_message, '') END,
          error_class = 'TaskFailed'
      WHERE error_class IS NOT NULL
        AND error_class NOT IN ('TaskFailed', 'DataError', 'DefinitionError', 'DefinitionChanged', 'Timeout', 'Cancelled', 'LeaseLost', 'LeaseExpired', 'TaskCrashed', 'SpawnError', 'ExitCode', 'Signal', 'SummaryError', 'SummaryTooLarge', 'SensorTimeout');
    `,
  },
  {
    version: 20,
    name: "task instances' updates counted and fed to the change feed once per statement, not once per row",
    // PostgreSQL's migration 20 turns two row triggers into one statement trigger. SQLite has
    // row triggers only, run in-process at no round trip's cost: its schema stays as it is, and
    // the version is recorded so that both adapters' versions mean the same schema.
    sql: "",
  },
  {
    version: 21,
    name: "a task instance's state change: one trigger for the change feed and the run's counts, two indexes fewer",
    sql: `
      -- Any trigger on an UPDATE of task_instances makes every one of its partial indexes dearer
      -- to keep. Measured per state change, as a worker's loop makes them: about 10 us with no
      -- trigger, 30-40 with the two of migrations 6 and 17, 16 with this one trigger doing both
      -- jobs and the live-by-run index gone, 13-14 with one index of running rows instead of two.
      -- Its conditions are chains of equalities rather than IN lists of constants. The state
      -- sets are core's LIVE_TASK_STATES and FAILING_TASK_STATES, as in migration 17
      -- (test/store/run-counts.ts checks the counts against a recount).
      DROP TRIGGER change_feed_task_state;
      DROP TRIGGER run_counts_changed;
      CREATE TRIGGER task_state_changed AFTER UPDATE OF state, try_number ON task_instances
        WHEN OLD.state IS NOT NEW.state OR OLD.try_number IS NOT NEW.try_number
      BEGIN
        INSERT INTO change_events (kind, run_id, task_id, state, try_number)
        VALUES ('task', NEW.run_id, NEW.task_id, NEW.state, NEW.try_number);
        UPDATE runs SET
          live_tasks = live_tasks + (NEW.state = 'scheduled' OR NEW.state = 'queued' OR NEW.state = 'running' OR NEW.state = 'up_for_retry' OR NEW.state = 'up_for_reschedule') - (OLD.state = 'scheduled' OR OLD.state = 'queued' OR OLD.state = 'running' OR OLD.state = 'up_for_retry' OR OLD.state = 'up_for_reschedule'),
          failed_tasks = failed_tasks + (NEW.state = 'failed' OR NEW.state = 'upstream_failed') - (OLD.state = 'failed' OR OLD.state = 'upstream_failed')
        WHERE run_id = NEW.run_id
          AND ((OLD.state = 'scheduled' OR OLD.state = 'queued' OR OLD.state = 'running' OR OLD.state = 'up_for_retry' OR OLD.state = 'up_for_reschedule') IS NOT (NEW.state = 'scheduled' OR NEW.state = 'queued' OR NEW.state = 'running' OR NEW.state = 'up_for_retry' OR NEW.state = 'up_for_reschedule') OR (OLD.state = 'failed' OR OLD.state = 'upstream_failed') IS NOT (NEW.state = 'failed' OR NEW.state = 'upstream_failed'));
      END;
      -- Read by no SQLite statement (whether a run has live work is its live_tasks count).
      DROP INDEX task_instances_live_by_run;
      -- One index of running rows, not two: the pools' use reads it by pool, the parallelism and
      -- per-pipeline caps (countRunningAll, countRunningByPipeline) read it whole, covering.
      DROP INDEX task_instances_running_run;
      DROP INDEX task_instances_running_pool;
      CREATE INDEX task_instances_running_pool ON task_instances (pool, run_id) WHERE state = 'running';
    `,
  },
  {
    version: 22,
    name: "dataset events from outside idem: their source, actor, summary and idempotency key",
    sql: `
      -- An event that an outside producer sends (the API, the CLI, a signed webhook) has no run,
      -- pipeline or task: those columns become nullable, which SQLite can only do by building the
      -- table again. Ids are kept (the pipelines' event cursors and waits point at them); the
      -- AUTOINCREMENT sequence follows the copied ids, as no event is ever deleted. A repeated idempotency key of a dataset is one event: the
      -- partial unique index holds outside events only, so a producing task's insert pays nothing.
      CREATE TABLE dataset_events_22 (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        dataset         TEXT NOT NULL,
        business_date   TEXT NOT NULL,
        run_id          TEXT,
        pipeline_id     TEXT,
        task_id         TEXT,
        trigger_kind    TEXT,
        at              INTEGER NOT NULL,
        source          TEXT NOT NULL DEFAULT 'run',
        actor           TEXT,
        idempotency_key TEXT,
        summary         TEXT
      );
      INSERT INTO dataset_events_22 (id, dataset, business_date, run_id, pipeline_id, task_id, trigger_kind, at)
        SELECT id, dataset, business_date, run_id, pipeline_id, task_id, trigger_kind, at FROM dataset_events;
      DROP TABLE dataset_events;
      ALTER TABLE dataset_events_22 RENAME TO dataset_events;
      CREATE INDEX dataset_events_by_dataset ON dataset_events (dataset, id);
      CREATE UNIQUE INDEX dataset_events_idempotency ON dataset_events (dataset, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    `,
  },
  {
    version: 23,
    name: "an incident's lifecycle: acknowledged (by whom, why, until when), resolved by whom; late publications closed",
    sql: `
      -- A person acknowledges an incident (with an end: a snooze) or resolves it with a reason;
      -- idem resolves it when its cause ends (resolved_by = core's SYSTEM_ACTOR). The rules are
      -- core's decideIncidentAction; each transition is in the audit log too.
      ALTER TABLE incidents ADD COLUMN acknowledged_at INTEGER;
      ALTER TABLE incidents ADD COLUMN acknowledged_by TEXT;
      ALTER TABLE incidents ADD COLUMN ack_reason TEXT;
      ALTER TABLE incidents ADD COLUMN ack_until INTEGER;
      ALTER TABLE incidents ADD COLUMN resolved_by TEXT;
      UPDATE incidents SET resolved_by = 'watchdog' WHERE resolved_at IS NOT NULL;
      -- A publication after its deadline is a fact, closed by the publication that ended it.
      UPDATE incidents SET resolved_at = opened_at, resolved_by = 'watchdog',
        resolution = 'closed by its publication: a late publication is a fact, not a condition'
      WHERE kind = 'late_publication' AND resolved_at IS NULL;
      CREATE TRIGGER change_feed_incident_acknowledged AFTER UPDATE OF acknowledged_at ON incidents
        WHEN NEW.resolved_at IS NULL BEGIN
        INSERT INTO change_events (kind, state, incident_key) VALUES ('incident', 'acknowledged', NEW.incident_key);
      END;
    `,
  },
  {
    version: 24,
    name: "a snooze's end is told once: the acknowledgement whose end was told, and the outbox keyed by occasion",
    sql: `
      -- A snooze that ends with the incident unresolved queues one "reopen" alert per notifier
      -- (core's reopenDue). reopened_for is the acknowledged_at of the snooze whose end was told,
      -- so the next pass does not tell it again; a later snooze has its own end to tell.
      ALTER TABLE incidents ADD COLUMN reopened_for INTEGER;
      -- An incident may be reopened once per snooze: an outbox row is unique per occasion (for a
      -- reopen, the end of the snooze it tells, later than any end told before it, as a snooze
      -- must end after it is made; 0 for an opening or a resolution, which happen once).
      -- SQLite changes a table's unique constraint only by building the table again; ids are kept.
      CREATE TABLE alert_outbox_24 (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        incident_key    TEXT NOT NULL,
        event           TEXT NOT NULL,
        notifier        TEXT NOT NULL,
        payload         TEXT NOT NULL,
        tries           INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        delivered_at    INTEGER,
        last_error      TEXT,
        occasion        INTEGER NOT NULL DEFAULT 0,
        UNIQUE (incident_key, event, notifier, occasion)
      );
      INSERT INTO alert_outbox_24 (id, incident_key, event, notifier, payload, tries, next_attempt_at, delivered_at, last_error)
        SELECT id, incident_key, event, notifier, payload, tries, next_attempt_at, delivered_at, last_error FROM alert_outbox;
      DROP TABLE alert_outbox;
      ALTER TABLE alert_outbox_24 RENAME TO alert_outbox;
      CREATE INDEX alert_outbox_due ON alert_outbox (next_attempt_at) WHERE delivered_at IS NULL;
    `,
  },
  {
    version: 25,
    name: "a run keeps its code: each run names the code version (bundle) it runs, and the bundles are indexed",
    sql: `
      -- The content hash of the pipeline file's bundle the run was created with (null: a run made
      -- before bundles, or of a pipeline with no file); every attempt of the run loads that bundle.
      ALTER TABLE runs ADD COLUMN code_version TEXT;
      -- Where each bundle was stored and what it was built from; the bundle itself is a file
      -- (the state directory, or the config's \`bundles\` directory every worker reads).
      CREATE TABLE code_versions (
        pipeline_id   TEXT NOT NULL,
        code_version  TEXT NOT NULL,
        graph_version TEXT NOT NULL,
        file          TEXT NOT NULL,
        location      TEXT NOT NULL,
        packages      TEXT NOT NULL,
        created_at    INTEGER NOT NULL,
        created_by    TEXT,
        PRIMARY KEY (pipeline_id, code_version)
      );
    `,
  },
  {
    version: 26,
    name: "fan-out: a mapped task's instances, one per key, and the counts its own row keeps of them",
    sql: `
      -- A mapped instance is a task instance whose identity is (run, task, key): its task_id is
      -- core's mappedTaskId (task[key]; task ids hold no bracket), map_task and map_key say the
      -- same in columns, and the partial unique index keeps one instance per key.
      -- map_position orders the list as it came (maxActive releases held instances in it);
      -- map_item is the item as JSON. On the mapped task's own row, once expanded: how many of
      -- its instances are live, failing and not removed (core's mappedTaskEnd reads them), and
      -- maxActive. A removed key's instance stays, in state 'removed'.
      ALTER TABLE task_instances ADD COLUMN map_task TEXT;
      ALTER TABLE task_instances ADD COLUMN map_key TEXT;
      ALTER TABLE task_instances ADD COLUMN map_position INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_item TEXT;
      ALTER TABLE task_instances ADD COLUMN map_live INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_failing INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_total INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_max_active INTEGER;
      CREATE UNIQUE INDEX task_instances_map_identity ON task_instances (run_id, map_task, map_key) WHERE map_task IS NOT NULL;
      CREATE INDEX task_instances_map_held ON task_instances (run_id, map_task, map_position)
        WHERE state = 'scheduled' AND map_task IS NOT NULL;
      -- Whatever changes a mapped instance's state (a finish, a lost lease, a rerun, a hand)
      -- keeps its mapped task's counts: a finish then reads one row to know whether the mapped
      -- task has ended. The sets are core's LIVE_TASK_STATES and FAILING_TASK_STATES.
      CREATE TRIGGER task_instances_map_counts AFTER UPDATE OF state ON task_instances
      FOR EACH ROW WHEN NEW.map_task IS NOT NULL AND NEW.state IS NOT OLD.state
      BEGIN
        UPDATE task_instances SET
          map_live = map_live
            + (NEW.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule'))
            - (OLD.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule')),
          map_failing = map_failing + (NEW.state IN ('failed', 'upstream_failed')) - (OLD.state IN ('failed', 'upstream_failed')),
          map_total = map_total + (NEW.state <> 'removed') - (OLD.state <> 'removed')
        WHERE run_id = NEW.run_id AND task_id = NEW.map_task;
      END;
    `,
  },
  {
    version: 27,
    name: "external jobs: the handle of a remote job, recorded before idem waits on it",
    sql: `
      -- One row per job submitted by an external task. A task instance waits on at most one job
      -- at a time (open), or has one that waits to be cancelled because the task instance no
      -- longer waits on it (a clear, a cancelled backfill): the partial unique index says so, and
      -- a retry or a worker taking over reattaches to that row instead of submitting again.
      CREATE TABLE external_jobs (
        job_id       INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id       TEXT NOT NULL,
        task_id      TEXT NOT NULL,
        attempt_id   INTEGER NOT NULL,
        try_number   INTEGER NOT NULL,
        job_key      TEXT NOT NULL,
        handle       TEXT NOT NULL,
        adapter      TEXT NOT NULL,
        link         TEXT,
        state        TEXT NOT NULL,
        submitted_at INTEGER NOT NULL,
        ended_at     INTEGER,
        note         TEXT
      );
      CREATE INDEX external_jobs_by_task ON external_jobs (run_id, task_id, job_id);
      CREATE UNIQUE INDEX external_jobs_live ON external_jobs (run_id, task_id) WHERE state IN ('open', 'cancel_requested');
      CREATE INDEX external_jobs_to_cancel ON external_jobs (job_id) WHERE state = 'cancel_requested';
    `,
  },
  {
    version: 28,
    name: "fan-out by key: a mapped instance waiting for the instance of the same key upstream",
    sql: `
      -- A task mapped by key over another mapped task (items: { keysOf }) is expanded with it:
      -- its instance of key k waits for the upstream instance of key k alone (map_parent, that
      -- instance's task_id), so each key moves on as soon as its own upstream succeeds. The
      -- partial index finds the instances waiting on one that settled.
      ALTER TABLE task_instances ADD COLUMN map_parent TEXT;
      CREATE INDEX task_instances_map_waiting ON task_instances (run_id, map_parent)
        WHERE state = 'scheduled' AND map_parent IS NOT NULL;
    `,
  },
  {
    version: 29,
    name: "a backfill's code: the runs it runs again keep their code (same) or move to the pipeline as loaded (latest)",
    sql: `
      ALTER TABLE backfills ADD COLUMN code_choice TEXT NOT NULL DEFAULT 'latest';
    `,
  },
  {
    version: 30,
    name: "collecting old bundles: a code version whose bundle was removed is marked, and no run is pinned to it after",
    sql: `
      -- Collection marks the version (in the transaction that checks no live or recent run uses it)
      -- before removing its files; creating a run pinned to a marked version is refused, and a
      -- process that stores the same code again clears the mark.
      ALTER TABLE code_versions ADD COLUMN collected_at INTEGER;
    `,
  },
  {
    version: 31,
    name: "a mapped task's active instances by an index of their own, for maxActive and operators' actions by key",
    sql: `
      -- How many instances of a mapped task hold a maxActive place (queued, running, waiting to
      -- retry): read when a clear or mark by key frees or takes places, and when a chained
      -- instance becomes eligible under maxActive. Over this index it costs O(the active ones),
      -- never O(the task's instances).
      CREATE INDEX task_instances_map_active ON task_instances (run_id, map_task)
        WHERE state IN ('queued', 'running', 'up_for_retry', 'up_for_reschedule') AND map_task IS NOT NULL;
    `,
  },
  {
    version: 32,
    name: "a remote job may hold its task's pool slots while it runs (holdPoolWhileRemote)",
    sql: `
      -- The pool and slots the job holds, copied from its task instance when the handle is
      -- recorded; none (0) unless the task asked. A job holds them while it is open and its task
      -- instance is live: claims count it in place of the task instance (never both), and the
      -- partial index finds the holders.
      ALTER TABLE external_jobs ADD COLUMN held_pool TEXT;
      ALTER TABLE external_jobs ADD COLUMN held_slots INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX external_jobs_holding ON external_jobs (held_pool) WHERE state = 'open' AND held_slots > 0;
    `,
  },
  {
    version: 33,
    name: "a mapped task's instances counted by state on its own row: the grid's cell and the run page read one row, never the instances",
    sql: `
      -- Beside map_live, map_failing and map_total (migration 26), how many of a mapped task's
      -- instances are in each state (core's TASK_STATES), kept by the same row trigger in the
      -- transaction that changes a state, and written whole by the expansion's recount. Null
      -- until the mapped task has expanded its list.
      ALTER TABLE task_instances ADD COLUMN map_in_scheduled INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_in_queued INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_in_running INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_in_success INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_in_failed INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_in_up_for_retry INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_in_up_for_reschedule INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_in_skipped INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_in_upstream_failed INTEGER;
      ALTER TABLE task_instances ADD COLUMN map_in_removed INTEGER;
      UPDATE task_instances SET (map_in_scheduled, map_in_queued, map_in_running, map_in_success, map_in_failed, map_in_up_for_retry, map_in_up_for_reschedule, map_in_skipped, map_in_upstream_failed, map_in_removed) = (
        SELECT count(*) FILTER (WHERE m.state = 'scheduled'),
          count(*) FILTER (WHERE m.state = 'queued'),
          count(*) FILTER (WHERE m.state = 'running'),
          count(*) FILTER (WHERE m.state = 'success'),
          count(*) FILTER (WHERE m.state = 'failed'),
          count(*) FILTER (WHERE m.state = 'up_for_retry'),
          count(*) FILTER (WHERE m.state = 'up_for_reschedule'),
          count(*) FILTER (WHERE m.state = 'skipped'),
          count(*) FILTER (WHERE m.state = 'upstream_failed'),
          count(*) FILTER (WHERE m.state = 'removed')
        FROM task_instances m WHERE m.run_id = task_instances.run_id AND m.map_task = task_instances.task_id)
      WHERE map_total IS NOT NULL;
      DROP TRIGGER task_instances_map_counts;
      CREATE TRIGGER task_instances_map_counts AFTER UPDATE OF state ON task_instances
      FOR EACH ROW WHEN NEW.map_task IS NOT NULL AND NEW.state IS NOT OLD.state
      BEGIN
        UPDATE task_instances SET
          map_live = map_live
            + (NEW.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule'))
            - (OLD.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule')),
          map_failing = map_failing + (NEW.state IN ('failed', 'upstream_failed')) - (OLD.state IN ('failed', 'upstream_failed')),
          map_total = map_total + (NEW.state <> 'removed') - (OLD.state <> 'removed'),
          map_in_scheduled = map_in_scheduled + (NEW.state = 'scheduled') - (OLD.state = 'scheduled'),
          map_in_queued = map_in_queued + (NEW.state = 'queued') - (OLD.state = 'queued'),
          map_in_running = map_in_running + (NEW.state = 'running') - (OLD.state = 'running'),
          map_in_success = map_in_success + (NEW.state = 'success') - (OLD.state = 'success'),
          map_in_failed = map_in_failed + (NEW.state = 'failed') - (OLD.state = 'failed'),
          map_in_up_for_retry = map_in_up_for_retry + (NEW.state = 'up_for_retry') - (OLD.state = 'up_for_retry'),
          map_in_up_for_reschedule = map_in_up_for_reschedule + (NEW.state = 'up_for_reschedule') - (OLD.state = 'up_for_reschedule'),
          map_in_skipped = map_in_skipped + (NEW.state = 'skipped') - (OLD.state = 'skipped'),
          map_in_upstream_failed = map_in_upstream_failed + (NEW.state = 'upstream_failed') - (OLD.state = 'upstream_failed'),
          map_in_removed = map_in_removed + (NEW.state = 'removed') - (OLD.state = 'removed')
        WHERE run_id = NEW.run_id AND task_id = NEW.map_task;
      END;
    `,
  },
  {
    version: 34,
    name: "maxActive over a task mapped by key: a chained instance held back while its mapped task has no free place",
    sql: `
      -- A chained instance (items: { keysOf }) becomes eligible when its key's upstream instance
      -- settles; while its mapped task has maxActive instances active it waits, held: still
      -- 'scheduled', with map_held_at set (unlike those still waiting for their upstream). As an
      -- active one ends, the first held one by position is queued, found over this index.
      ALTER TABLE task_instances ADD COLUMN map_held_at INTEGER;
      CREATE INDEX task_instances_map_ready ON task_instances (run_id, map_task, map_position)
        WHERE state = 'scheduled' AND map_held_at IS NOT NULL;
    `,
  },
  {
    version: 35,
    name: "the runs of one code version, for a pipeline's versions timeline",
    sql: `
      -- The timeline pages each version's runs (newest business date first); without this, a
      -- page of an old version walks every newer run of the pipeline by interval to find them.
      CREATE INDEX runs_by_code_version ON runs (pipeline_id, code_version, interval_start);
    `,
  },
];
