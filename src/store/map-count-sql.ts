/**
 * The counts a mapped task's own row keeps over its instances (migrations 26 and 33), as one
 * column list and one matching select list. Both adapters recount with them (SQLite and
 * PostgreSQL share `count(*) FILTER`), so a state added to the counts is added once.
 */
export const MAP_COUNT_COLUMNS =
  "map_live, map_failing, map_total, map_in_scheduled, map_in_queued, map_in_running, map_in_success, map_in_failed, map_in_up_for_retry, map_in_up_for_reschedule, map_in_skipped, map_in_upstream_failed, map_in_removed";

export const MAP_COUNT_SELECT = `count(*) FILTER (WHERE m.state IN ('scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule')),
               count(*) FILTER (WHERE m.state IN ('failed', 'upstream_failed')),
               count(*) FILTER (WHERE m.state <> 'removed'),
               count(*) FILTER (WHERE m.state = 'scheduled'),
               count(*) FILTER (WHERE m.state = 'queued'),
               count(*) FILTER (WHERE m.state = 'running'),
               count(*) FILTER (WHERE m.state = 'success'),
               count(*) FILTER (WHERE m.state = 'failed'),
               count(*) FILTER (WHERE m.state = 'up_for_retry'),
               count(*) FILTER (WHERE m.state = 'up_for_reschedule'),
               count(*) FILTER (WHERE m.state = 'skipped'),
               count(*) FILTER (WHERE m.state = 'upstream_failed'),
               count(*) FILTER (WHERE m.state = 'removed')`;
