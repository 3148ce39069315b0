import type { RunState, TaskState } from "../model/states.ts";
import { decideTrigger, isSettledByUpstream, type TriggerRule, type UpstreamCounts } from "./trigger-rules.ts";

/**
 * What happens to a run when one of its task instances settles: which waiting instances become
 * eligible, are skipped or marked upstream_failed, and whether the run ends. Every store adapter
 * reads the rows these decisions need, calls them, and writes what they return, in the
 * transaction that settled the task; so a trigger rule or the end of a run is decided here once.
 *
 * The inputs are what changed, never the whole run: the task that settled and its waiting
 * children with their parents' states; a skip or upstream failure that flows further down asks
 * for the next level's children, one level at a time (`RunProgress.next`). A finish thus costs
 * O(its children), whatever the size of the run.
 */

/** Task instance states that keep a run open. */
export const LIVE_TASK_STATES = ["scheduled", "queued", "running", "up_for_retry", "up_for_reschedule"] as const satisfies readonly TaskState[];
/** Task instance states that make a run that ends fail. */
export const FAILING_TASK_STATES = ["failed", "upstream_failed"] as const satisfies readonly TaskState[];

/** Whether a run ends, and how, from whether anything in it is still live and whether anything failed. */
export function runEnd(progress: { live: boolean; failed: boolean }): RunState | null {
  if (progress.live) return null;
  return progress.failed ? "failed" : "success";
}

/** How a try ends: a retry when one is allowed, else the outcome itself (which flows downstream). */
export interface TryEnd {
  state: TaskState;
  nextTryAt: number | null;
  reason: string | null;
  endedAt: number | null;
}

export function endTry(
  ti: { tryNumber: number; maxTries: number },
  outcome: "success" | "failed" | "skipped",
  retryAt: number | null,
  skipReason: string | null,
  now: number,
): TryEnd {
  const known = endTryKnown(outcome, retryAt, skipReason, now);
  if (known) return known;
  if (ti.tryNumber < ti.maxTries) return { state: "up_for_retry", nextTryAt: retryAt, reason: null, endedAt: null };
  return { state: outcome, nextTryAt: null, reason: null, endedAt: now };
}

/**
 * The end of a try when it does not depend on the tries left (no retry was asked for), so a
 * store can write it before it has read the task instance; null when it does.
 */
export function endTryKnown(outcome: "success" | "failed" | "skipped", retryAt: number | null, skipReason: string | null, now: number): TryEnd | null {
  if (outcome === "failed" && retryAt !== null) return null;
  return { state: outcome, nextTryAt: null, reason: outcome === "skipped" ? skipReason : null, endedAt: now };
}

/** The try number of the attempt a claim starts: a sensor poking again is the same try; anything else a new one. */
export function nextTryNumber(ti: { state: TaskState; tryNumber: number }): number {
  return ti.state === "up_for_reschedule" ? Math.max(1, ti.tryNumber) : ti.tryNumber + 1;
}

/**
 * Why a task instance cannot be settled by hand (skip, mark success or failed), or null when it
 * can: its run and the task must exist, and the task must not be running, for its attempt would
 * end over the hand's state. `taskState` is null for a task the run does not have.
 */
export function settleByHandRefusal(runId: string, taskId: string, found: { run: boolean; taskState: TaskState | null }): string | null {
  if (!found.run) return `no run ${runId}`;
  if (found.taskState === null) return `run ${runId} has no task ${taskId}`;
  if (found.taskState === "running") return `task ${taskId} of run ${runId} is running; wait for it to end`;
  return null;
}

/**
 * A task settled by hand (skip, mark): a downstream instance that a trigger rule settled because
 * of the old state waits again, with the tries it had left; null when it stays as it is.
 */
export function reopenedByHand(child: { state: TaskState; reason: string | null; tryNumber: number; maxTries: number }): { maxTries: number } | null {
  if (!isSettledByUpstream(child.state, child.reason)) return null;
  return { maxTries: Math.max(1, child.maxTries - child.tryNumber) };
}

/** A task instance in state `scheduled`, with the stored state of each of its parents. */
export interface WaitingTask {
  taskId: string;
  triggerRule: TriggerRule;
  parents: ReadonlyMap<string, TaskState>;
}

/** A decision about a waiting task instance, stamped with the time of the settle that caused it. */
export interface Settlement {
  taskId: string;
  state: "queued" | "skipped" | "upstream_failed";
  reason: string | null;
  at: number;
}

/**
 * The trigger-rule decisions of one run inside one transaction. Decisions go depth first from
 * the task that settled, children in id order; a decision counts each parent with the state this
 * transaction now knows (a sibling decided a moment ago counts with its new state).
 */
export class RunProgress {
  readonly decided: Settlement[] = [];
  readonly #known = new Map<string, TaskState>();
  /** Waiting children (ids, in order) by parent: present once they were read. */
  readonly #children = new Map<string, string[]>();
  readonly #waiting = new Map<string, WaitingTask>();
  /** Settled tasks whose waiting children are still to be decided. */
  readonly #stack: string[] = [];
  #at = 0;

  /** Records a state this transaction wrote (a finish in the same batch), without deciding anything yet. */
  know(taskId: string, state: TaskState): void {
    this.#known.set(taskId, state);
  }

  /** What was read: the waiting children of `parent` (perhaps none), each with all its parents' states. */
  childrenRead(parent: string, children: readonly WaitingTask[]): void {
    const ids = this.#children.get(parent) ?? [];
    for (const child of children) {
      if (!ids.includes(child.taskId)) ids.push(child.taskId);
      if (!this.#waiting.has(child.taskId)) this.#waiting.set(child.taskId, child);
    }
    this.#children.set(parent, ids);
  }

  /** Whether the waiting children of `parent` were read already. */
  hasRead(parent: string): boolean {
    return this.#children.has(parent);
  }

  /** `taskId` reached a final state at `at`: its waiting children are to be decided. */
  settled(taskId: string, state: TaskState, at: number): void {
    this.#known.set(taskId, state);
    this.#at = at;
    this.#stack.push(taskId);
  }

  /**
   * Decides what it can. Returns the task whose waiting children must be read (then call
   * `childrenRead` and `next` again), or null when every consequence is decided.
   */
  next(): string | null {
    while (this.#stack.length > 0) {
      const parent = this.#stack.at(-1)!;
      if (!this.#children.has(parent)) return parent;
      this.#stack.pop();
      for (const s of this.#decide(this.#children.get(parent)!)) {
        if (s.state !== "queued") this.#stack.push(s.taskId);
      }
    }
    return null;
  }

  /**
   * Applies the trigger rules to these tasks in this order (those of them that wait, as read
   * into `tasks`), going no further down: a rerun's reset tasks.
   */
  settleEach(order: readonly string[], tasks: readonly WaitingTask[], at: number): void {
    this.#at = at;
    for (const t of tasks) if (!this.#waiting.has(t.taskId)) this.#waiting.set(t.taskId, t);
    this.#decide(order);
  }

  /** Whether a decision settled a task without running it (the run may have ended). */
  get settledWithoutRunning(): boolean {
    return this.decided.some((d) => d.state !== "queued");
  }

  /**
   * Whether what was read and decided shows the run still has live work (a task queued, or one
   * read as waiting still waits): then nobody needs to ask whether it ended.
   */
  get keepsRunLive(): boolean {
    if (this.madeEligible) return true;
    for (const taskId of this.#waiting.keys()) if (!this.#known.has(taskId)) return true;
    return false;
  }

  /** Whether a decision made a task eligible to run. */
  get madeEligible(): boolean {
    return this.decided.some((d) => d.state === "queued");
  }

  #decide(taskIds: readonly string[]): Settlement[] {
    const changed: Settlement[] = [];
    for (const taskId of taskIds) {
      const task = this.#waiting.get(taskId);
      if (!task || this.#known.has(taskId)) continue;
      const counts: UpstreamCounts = { total: 0, success: 0, skipped: 0, failed: 0 };
      for (const [parent, stored] of task.parents) {
        const state = this.#known.get(parent) ?? stored;
        counts.total++;
        if (state === "success") counts.success++;
        else if (state === "skipped") counts.skipped++;
        else if (state === "failed" || state === "upstream_failed") counts.failed++;
      }
      const decision = decideTrigger(task.triggerRule, counts);
      if (decision.action === "wait") continue;
      const state = decision.action === "run" ? "queued" : decision.action === "skip" ? "skipped" : "upstream_failed";
      const settlement: Settlement = { taskId, state, reason: decision.action === "run" ? null : decision.reason, at: this.#at };
      this.#known.set(taskId, state);
      this.decided.push(settlement);
      changed.push(settlement);
    }
    return changed;
  }
}
