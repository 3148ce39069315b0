/**
 * Trigger rules decide, from the states of a task's upstream instances, whether it may run.
 * Semantics follow Airflow's, so that a data engineer's expectations carry over.
 */
export const TRIGGER_RULES = [
  "all_success",
  "all_done",
  "one_success",
  "none_failed",
  "none_failed_min_one_success",
  "always",
] as const;
export type TriggerRule = (typeof TRIGGER_RULES)[number];

export interface UpstreamCounts {
  total: number;
  success: number;
  skipped: number;
  /** failed or upstream_failed */
  failed: number;
}

export type TriggerDecision =
  | { action: "wait" }
  | { action: "run" }
  | { action: "skip"; reason: string }
  | { action: "upstream_failed"; reason: string };

const WAIT: TriggerDecision = { action: "wait" };
const RUN: TriggerDecision = { action: "run" };

export function decideTrigger(rule: TriggerRule, up: UpstreamCounts): TriggerDecision {
  const done = up.success + up.skipped + up.failed;
  const allDone = done >= up.total;
  // A task with no upstream has nothing to wait for, whatever its rule.
  if (up.total === 0) return RUN;
  switch (rule) {
    case "always":
      return RUN;
    case "all_done":
      return allDone ? RUN : WAIT;
    case "all_success":
      if (up.failed > 0) return failed(`${up.failed} task(s) failed`);
      if (up.skipped > 0) return skip(`${up.skipped} task(s) skipped`);
      return allDone ? RUN : WAIT;
    case "one_success":
      if (up.success > 0) return RUN;
      if (!allDone) return WAIT;
      if (up.skipped === up.total) return skip("every one was skipped");
      return failed("none succeeded");
    case "none_failed":
      if (up.failed > 0) return failed(`${up.failed} task(s) failed`);
      return allDone ? RUN : WAIT;
    case "none_failed_min_one_success":
      if (up.failed > 0) return failed(`${up.failed} task(s) failed`);
      if (!allDone) return WAIT;
      return up.success > 0 ? RUN : skip("none succeeded (all skipped)");
  }
}

/** Every reason a trigger rule gives starts with this, so it can be told apart from a skip by hand. */
const UPSTREAM = "upstream: ";

function skip(reason: string): TriggerDecision {
  return { action: "skip", reason: UPSTREAM + reason };
}
function failed(reason: string): TriggerDecision {
  return { action: "upstream_failed", reason: UPSTREAM + reason };
}

/** True when a task instance was settled by a trigger rule (not by its own run or by hand). */
export function isSettledByUpstream(state: string, reason: string | null): boolean {
  return state === "upstream_failed" || (state === "skipped" && (reason ?? "").startsWith(UPSTREAM));
}
