import type { TaskState } from "../model/states.ts";
import { mappedTaskId } from "./fan-out.ts";
import { keyMatcher } from "./key-selector.ts";

/**
 * Clearing mapped instances by key: `load[a.csv]` names one key, `load[2026-*]` every key the
 * glob matches (`*` any run of characters, none included; `\` makes the next character literal,
 * so `load[a\*b]` names the key `a*b`). A clear reaches the matched instances, the instances of
 * the same keys of the tasks mapped by key over it (its chain), and the tasks downstream of the
 * mapped task (a reduce): no other key runs again. What the brackets name is key-selector.ts's.
 */

export interface KeyClearInput {
  runId: string;
  /** The mapped task named (not an instance). */
  taskId: string;
  /** The key or glob inside the brackets. */
  selector: string;
  /** Whether the mapped task was expanded (has instances at all). */
  expanded: boolean;
  /** The mapped task's instances the selector's keyLookup reached (key and state), removed ones included. */
  instances: readonly { key: string; state: TaskState }[];
  /** The tasks mapped by key over it, in chain order (core's keyedChain). */
  chain: readonly string[];
  /** The state of every chained instance of a matched key (absent: not expanded yet). */
  chainStates: ReadonlyMap<string, TaskState>;
  /** The plain tasks downstream of the mapped task and its chain, with their states. */
  downstream: readonly { taskId: string; state: TaskState }[];
}

export type KeyClearPlan =
  | { conflict: string }
  | {
      conflict?: undefined;
      keys: string[];
      /** Instance ids to reset: the matched keys' instances, then their chained ones. */
      instances: string[];
      /** Mapped tasks that wait again for their instances: the one named and its chain. */
      reopen: string[];
      /** Plain task instances downstream that wait again. */
      downstream: string[];
    };

/**
 * What a clear by key resets, or why it is refused whole: no instance matches (removed keys are
 * not cleared: their key left the list), or one of those it would reset is running.
 */
export function planKeyClear(input: KeyClearInput): KeyClearPlan {
  const named = `${input.taskId}[${input.selector}]`;
  if (!input.expanded) return { conflict: `run ${input.runId}: task ${input.taskId} has no mapped instances to clear (${named})` };
  const keys = matchedKeys(input.selector, input.instances);
  if (keys.length === 0) return { conflict: `run ${input.runId}: no instance of ${input.taskId} matches ${named} (removed keys are not cleared)` };
  const instances = keys.map((k) => mappedTaskId(input.taskId, k));
  for (const task of input.chain) for (const k of keys) if (input.chainStates.has(mappedTaskId(task, k))) instances.push(mappedTaskId(task, k));
  const states = new Map(input.instances.map((i) => [mappedTaskId(input.taskId, i.key), i.state]));
  const busy = [
    ...instances.filter((id) => (states.get(id) ?? input.chainStates.get(id)) === "running"),
    ...input.downstream.filter((d) => d.state === "running").map((d) => d.taskId),
  ];
  if (busy.length > 0) return { conflict: `run ${input.runId} has a task running (${busy.slice(0, 5).join(", ")}${busy.length > 5 ? ", ..." : ""}); wait for it to finish` };
  return { keys, instances, reopen: [input.taskId, ...input.chain], downstream: input.downstream.map((d) => d.taskId) };
}

/** The keys a selector matches among instances, in key order; removed keys never (their key left the list). */
export function matchedKeys(selector: string, instances: readonly { key: string; state: TaskState }[]): string[] {
  const matches = keyMatcher(selector);
  return instances.filter((i) => i.state !== "removed" && matches(i.key)).map((i) => i.key).sort(compareCodePoints);
}

/** Code point order, the stores' order of keys (JavaScript's < compares UTF-16 units). */
export function compareCodePoints(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}
