import type { TaskState } from "../model/states.ts";
import { mappedTaskId } from "./fan-out.ts";

/**
 * Clearing mapped instances by key: `load[a.csv]` names one key, `load[2026-*]` every key the
 * glob matches (`*` any run of characters, none included; `\` makes the next character literal,
 * so `load[a\*b]` names the key `a*b`). A clear reaches the matched instances, the instances of
 * the same keys of the tasks mapped by key over it (its chain), and the tasks downstream of the
 * mapped task (a reduce): no other key runs again.
 */

/** Whether a selector is a pattern (holds an unescaped `*`) rather than one key. */
export function isKeyPattern(selector: string): boolean {
  for (let i = 0; i < selector.length; i++) {
    if (selector[i] === "\\") i++;
    else if (selector[i] === "*") return true;
  }
  return false;
}

/** A key selector's test: the key itself, or every key the glob matches. */
export function keyMatcher(selector: string): (key: string) => boolean {
  let source = "";
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i]!;
    if (c === "\\" && i + 1 < selector.length) source += escapeRegExp(selector[++i]!);
    else if (c === "*") source += "[\\s\\S]*";
    else source += escapeRegExp(c);
  }
  const re = new RegExp(`^${source}$`, "u");
  return (key) => re.test(key);
}

function escapeRegExp(c: string): string {
  return /[\\^$.*+?()[\]{}|]/.test(c) ? `\\${c}` : c;
}

export interface KeyClearInput {
  runId: string;
  /** The mapped task named (not an instance). */
  taskId: string;
  /** The key or glob inside the brackets. */
  selector: string;
  /** The mapped task's instances (key and state), removed ones included. */
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
  if (input.instances.length === 0) return { conflict: `run ${input.runId}: task ${input.taskId} has no mapped instances to clear (${named})` };
  const matches = keyMatcher(input.selector);
  const keys = input.instances.filter((i) => i.state !== "removed" && matches(i.key)).map((i) => i.key).sort();
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
