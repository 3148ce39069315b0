/**
 * Whether a due interval with no run is on its way (pending) or will not come by itself
 * (missing), and whether that deserves a "did not run" incident. Pure: the facts come in, the
 * clock is a parameter.
 */

/** What the watchdog knows of the scheduler that would create the run. */
export type SchedulerPresence =
  | {
      live: true;
      holder: string;
      /** Since when this holder leads, as far as the caller knows (-Infinity: unknown). */
      leadingSince: number;
    }
  | {
      live: false;
      holder: string | null;
      /** The last time any scheduler held the lead, or null when none ever did. */
      lastLeadAt: number | null;
      /** In words, for the ledger and the incident. */
      note: string;
    };

export interface UnrunInterval {
  intervalStart: number;
  firesAt: number;
  now: number;
  /** How long after its fire time a run may take to appear before it is called missing. */
  graceMs: number;
  paused: boolean;
  pausedNote: string | null;
  /** The pipeline's schedule cursor: the end of the last interval the scheduler accounted for. */
  cursor: number | null;
  liveRuns: number;
  maxActiveRuns: number;
  /** When the scheduler last moved this pipeline's cursor (created or skipped a run), or null. */
  lastProgressAt: number | null;
  scheduler: SchedulerPresence;
}

export type UnrunCause = "paused" | "passed_over" | "no_scheduler" | "stalled" | "run_cap" | "just_due" | "catching_up";

export interface UnrunVerdict {
  status: "pending" | "missing";
  cause: UnrunCause;
  note: string;
}

/**
 * Pending: a live scheduler is progressing toward it (it just fired, the run cap is full, or the
 * scheduler moved this pipeline's cursor within the grace: a catch-up in order). Missing: the
 * pipeline is paused, the scheduler passed over it, no scheduler leads, or one leads and has not
 * advanced this pipeline for longer than the grace although it had room.
 */
export function judgeUnrunInterval(f: UnrunInterval): UnrunVerdict {
  if (f.paused) return { status: "missing", cause: "paused", note: `pipeline is paused${f.pausedNote ? ` (${f.pausedNote})` : ""}` };
  if (f.cursor !== null && f.cursor > f.intervalStart) {
    return { status: "missing", cause: "passed_over", note: "passed over by the scheduler without a run (was the schedule or start changed?)" };
  }
  if (!f.scheduler.live) return { status: "missing", cause: "no_scheduler", note: f.scheduler.note };
  if (f.liveRuns >= f.maxActiveRuns) {
    return { status: "pending", cause: "run_cap", note: `waiting for the run cap (${f.liveRuns} of ${f.maxActiveRuns} runs active)` };
  }
  if (f.now < f.firesAt + f.graceMs) return { status: "pending", cause: "just_due", note: `scheduler ${f.scheduler.holder} is about to create it` };
  const progressAt = Math.max(f.lastProgressAt ?? -Infinity, f.scheduler.leadingSince);
  if (f.now < progressAt + f.graceMs) {
    return { status: "pending", cause: "catching_up", note: `scheduler ${f.scheduler.holder} is catching up in order` };
  }
  return {
    status: "missing",
    cause: "stalled",
    note: `scheduler ${f.scheduler.holder} leads but has not advanced this pipeline for ${Math.round((f.now - progressAt) / 1000)}s although the run cap has room (does it load this pipeline?)`,
  };
}

/**
 * A "did not run" incident: missing, and the grace after the fire time passed. A dead scheduler
 * is its own incident (one for all its pipelines), so its missing runs do not open one each.
 */
export function didNotRun(f: UnrunInterval, verdict: UnrunVerdict = judgeUnrunInterval(f)): boolean {
  return verdict.status === "missing" && verdict.cause !== "no_scheduler" && f.now >= f.firesAt + f.graceMs;
}
