import { keysOfMapped } from "../pipeline/kind.ts";
import type { TaskMap } from "../pipeline/types.ts";
import type { TaskState } from "../model/states.ts";

/**
 * Fan-out: a mapped task runs one instance per item of a list found when it becomes eligible.
 * Each instance is known by a stable key (never a position), so a rerun, a backfill or a
 * restatement of the same day reaches the instance with the same key. These are the decisions
 * a store and the engine share: what a list expands to (or why it is refused, whole: nothing is
 * ever half-expanded), how a rerun's list differs from the one before, and when a mapped task
 * as a whole has ended.
 */

/** Longest key, in UTF-8 bytes: a key names a log folder, a row in a page and a URL part. */
export const MAX_MAP_KEY_BYTES = 256;
/** The cap on a list when the task does not set `maxItems`. */
export const DEFAULT_MAX_ITEMS = 100_000;
const UTF8 = new TextEncoder();

/** How a mapped instance's id is written: the task id, then the key in brackets (`load[2026-09-01.csv]`). */
export function mappedTaskId(taskId: string, key: string): string {
  return `${taskId}[${key}]`;
}

/** The task and key of a mapped instance's id, or null for a task instance that is not mapped. */
export function parseMappedTaskId(id: string): { taskId: string; key: string } | null {
  const open = id.indexOf("[");
  if (open <= 0 || !id.endsWith("]")) return null;
  return { taskId: id.slice(0, open), key: id.slice(open + 1, -1) };
}

/** The task a task instance runs: its own id's, or for a mapped instance its mapped task's. */
export function taskOfInstance<T>(tasks: ReadonlyMap<string, T>, taskId: string): T | undefined {
  return tasks.get(parseMappedTaskId(taskId)?.taskId ?? taskId);
}

/**
 * The tasks mapped by key over `taskId`, and over those, in the order given (a pipeline's tasks
 * are in topological order): they are expanded with it, each instance waiting for the instance of
 * the same key of its `parent`.
 */
export function keyedChain(
  tasks: ReadonlyMap<string, { kind: string; map?: TaskMap | null }>,
  taskId: string,
): { taskId: string; parent: string; maxActive: number | null }[] {
  const chain: { taskId: string; parent: string; maxActive: number | null }[] = [];
  const inChain = new Set([taskId]);
  for (const [id, task] of tasks) {
    const over = keysOfMapped(task);
    if (over !== null && inChain.has(over)) {
      chain.push({ taskId: id, parent: over, maxActive: task.map?.maxActive ?? null });
      inChain.add(id);
    }
  }
  return chain;
}

/** One item of an expanded list: its key and the item as JSON text (what its instance receives). */
export interface MappedItem {
  key: string;
  item: string;
}

/** Where a list was found, to name in a problem: pipeline, task and business date. */
export interface ExpansionPlace {
  pipelineId: string;
  taskId: string;
  businessDate: string;
}

export interface ExpansionOptions {
  /** The key of an item; absent: a string item is its own key, and any other item is refused. */
  keyOf?: (item: unknown) => unknown;
  maxItems: number;
}

/**
 * The list refused: `kind` "definition" when the task must change (a key function is needed),
 * "data" when the list itself is wrong. Either way nothing is expanded.
 */
export interface ExpansionProblem {
  kind: "definition" | "data";
  message: string;
}

export type Expansion = { items: MappedItem[] } | { problem: ExpansionProblem };

/**
 * The instances a list expands to, in the list's order, or the first problem found: a value
 * that is not a list, more items than `maxItems`, an item that is not JSON, an item with no key
 * (not a string, and no key function), a key that is not a string, empty, longer than
 * MAX_MAP_KEY_BYTES or holding a control character, or two items with one key.
 */
export function expandItems(list: unknown, options: ExpansionOptions, place: ExpansionPlace): Expansion {
  const where = `pipeline ${place.pipelineId}, task ${place.taskId}, business date ${place.businessDate}`;
  const data = (message: string): Expansion => ({ problem: { kind: "data", message: `${where}: ${message}` } });
  if (!Array.isArray(list)) return data(`the list to map over is ${describeValue(list)}, not an array`);
  if (list.length > options.maxItems) return data(`${list.length} items to map over, over maxItems ${options.maxItems}`);
  const items: MappedItem[] = [];
  const seen = new Map<string, number>();
  for (let i = 0; i < list.length; i++) {
    const value: unknown = list[i];
    if (!isJsonValue(value)) return data(`item ${i} is not JSON (${describeValue(value)})`);
    let key: unknown;
    if (options.keyOf) {
      try {
        key = options.keyOf(value);
      } catch (error) {
        return data(`the key function threw on item ${i}: ${error instanceof Error ? error.message : String(error)}`);
      }
    } else if (typeof value === "string") {
      key = value;
    } else {
      return {
        problem: {
          kind: "definition",
          message: `${where}: item ${i} is ${describeValue(value)}, not a string; give map a key function (key: (item) => string)`,
        },
      };
    }
    const keyProblem = mapKeyProblem(key);
    if (keyProblem) return data(`item ${i}: ${keyProblem}`);
    const k = key as string;
    const first = seen.get(k);
    if (first !== undefined) return data(`items ${first} and ${i} have the same key ${JSON.stringify(k)}`);
    seen.set(k, i);
    items.push({ key: k, item: JSON.stringify(value) });
  }
  return { items };
}

/** Why a key cannot name a mapped instance, or null when it can. */
export function mapKeyProblem(key: unknown): string | null {
  if (typeof key !== "string") return `key ${describeValue(key)} is not a string`;
  if (key.length === 0) return "key is empty";
  const bytes = UTF8.encode(key).length;
  if (bytes > MAX_MAP_KEY_BYTES) return `key ${JSON.stringify(key.slice(0, 40))}... is ${bytes} bytes, over ${MAX_MAP_KEY_BYTES}`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(key)) return `key ${JSON.stringify(key)} holds a control character`;
  return null;
}

/** JSON in the strict sense: what JSON.parse(JSON.stringify(v)) gives back equal. */
export function isJsonValue(value: unknown, depth = 0): boolean {
  if (depth > 64) return false;
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((v) => isJsonValue(v, depth + 1));
  if (typeof value !== "object") return false;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.values(value as Record<string, unknown>).every((v) => isJsonValue(v, depth + 1));
}

function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return name && name !== "Object" ? `a ${name}` : "an object";
  }
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return `the string ${JSON.stringify(value.slice(0, 40))}`;
  return `a ${typeof value}`;
}

/** A mapped task's instances as the store holds them: each key, and whether it was removed. */
export interface ExistingKey {
  key: string;
  removed: boolean;
}

/**
 * How a new list differs from the instances a run has: `added` keys get new instances,
 * `kept` ones (including keys back after a removal) run again with their history, `removed`
 * ones are recorded as removed, never deleted. Each in the new list's order, `removed` in the
 * order of the existing instances.
 */
export interface KeyDiff {
  added: string[];
  kept: string[];
  removed: string[];
}

export function diffKeys(existing: readonly ExistingKey[], next: readonly string[]): KeyDiff {
  const had = new Set(existing.map((e) => e.key));
  const wanted = new Set(next);
  return {
    added: next.filter((k) => !had.has(k)),
    kept: next.filter((k) => had.has(k)),
    removed: existing.filter((e) => !e.removed && !wanted.has(e.key)).map((e) => e.key),
  };
}

/** The reason a mapped task with an empty list is skipped with. */
export const EMPTY_LIST_REASON = "the list to map over is empty";

/**
 * The state a mapped task ends in once its instances have, from the counts the store keeps
 * (instances still live, failing, and all that are not removed); null while any is live. An
 * empty list skips it; any failing instance fails it; else it succeeds, so a reduce downstream
 * runs under its usual trigger rule.
 */
export function mappedTaskEnd(counts: { live: number; failing: number; total: number }): { state: TaskState; reason: string | null } | null {
  if (counts.live > 0) return null;
  if (counts.total === 0) return { state: "skipped", reason: EMPTY_LIST_REASON };
  if (counts.failing > 0) return { state: "failed", reason: `${counts.failing} of ${counts.total} mapped instances failed` };
  return { state: "success", reason: null };
}

/**
 * Whether an instance settled by hand reopens its mapped task: it had ended (success or failed,
 * from its instances), so it counts them again and ends afresh, and what its old end settled
 * downstream is decided again.
 */
export function markReopensMappedTask(mapped: { state: TaskState; mapTotal: number | null }): boolean {
  return mapped.mapTotal !== null && (mapped.state === "success" || mapped.state === "failed");
}

/** Whether an instance in this state holds one of its mapped task's maxActive places (a held one waits as `scheduled`). */
export function holdsMaxActivePlace(state: TaskState): boolean {
  return state === "queued" || state === "running" || state === "up_for_retry" || state === "up_for_reschedule";
}

/**
 * Why a chained instance held back by its mapped task's maxActive waits, in words: how many of
 * its mapped task's instances hold a place (counted from the task's counts by state), of how many.
 */
export function maxActiveHoldReason(mappedTaskId: string, states: Readonly<Record<TaskState, number>>, maxActive: number): string {
  let active = 0;
  for (const [state, n] of Object.entries(states) as [TaskState, number][]) if (holdsMaxActivePlace(state)) active += n;
  return `held by maxActive: ${active} of ${maxActive} instances of ${mappedTaskId} are active; it is queued when one of them ends`;
}

/**
 * maxActive over a task mapped by key: of the chained instances a settle made eligible (in the
 * order decided), as many as their mapped task has free places are queued; the rest are held,
 * eligible, and queued one by one (in list order) as its active instances end. `room`: each
 * mapped task's free places (its maxActive less its active instances); a task absent from it
 * has no maxActive.
 */
export function admitUnderMaxActive(eligible: readonly string[], room: ReadonlyMap<string, number>): { queue: string[]; hold: string[] } {
  const left = new Map(room);
  const queue: string[] = [];
  const hold: string[] = [];
  for (const id of eligible) {
    const mapped = parseMappedTaskId(id)?.taskId;
    const free = mapped === undefined ? undefined : left.get(mapped);
    if (free === undefined) queue.push(id);
    else if (free > 0) {
      queue.push(id);
      left.set(mapped!, free - 1);
    } else hold.push(id);
  }
  return { queue, hold };
}
