import type { TaskState } from "../model/states.ts";
import { mappedTaskId } from "./fan-out.ts";
import { matchedKeys } from "./key-clear.ts";

/**
 * Marking mapped instances by key pattern (`idem mark <run> 'load[2026-*]' --state success`):
 * every instance the glob matches (key-selector.ts; removed keys never) is settled by hand as
 * one mark of each would, in one transaction. Instances already in the state are left as they
 * are. It is refused whole, with nothing marked, when nothing matches, when every match is in the
 * state already, or when a matched instance is running (a mark never settles a running attempt).
 */
export interface KeyMarkInput {
  runId: string;
  /** The mapped task named (not an instance). */
  taskId: string;
  selector: string;
  state: "success" | "failed";
  /** Whether the mapped task was expanded (has instances at all). */
  expanded: boolean;
  /** The instances the selector's keyLookup reached (key and state), removed ones included. */
  instances: readonly { key: string; state: TaskState }[];
}

export type KeyMarkPlan =
  | { conflict: string }
  | {
      conflict?: undefined;
      /** Every key matched, in key order. */
      matched: string[];
      /** The instance ids to settle: the matched ones not in the state already, in key order. */
      settle: string[];
    };

export function planKeyMark(input: KeyMarkInput): KeyMarkPlan {
  const named = `${input.taskId}[${input.selector}]`;
  if (!input.expanded) return { conflict: `run ${input.runId}: task ${input.taskId} has no mapped instances to mark (${named})` };
  const matched = matchedKeys(input.selector, input.instances);
  if (matched.length === 0) return { conflict: `run ${input.runId}: no instance of ${input.taskId} matches ${named} (removed keys are not marked)` };
  const states = new Map(input.instances.map((i) => [i.key, i.state]));
  const running = matched.filter((k) => states.get(k) === "running").map((k) => mappedTaskId(input.taskId, k));
  if (running.length > 0) {
    return { conflict: `run ${input.runId}: ${running.length} instance${running.length === 1 ? "" : "s"} of ${named} running (${running.slice(0, 5).join(", ")}${running.length > 5 ? ", ..." : ""}); wait for them to end` };
  }
  const settle = matched.filter((k) => states.get(k) !== input.state).map((k) => mappedTaskId(input.taskId, k));
  if (settle.length === 0) return { conflict: `run ${input.runId}: every instance ${named} matches (${matched.length}) is ${input.state} already` };
  return { matched, settle };
}
