import type { TaskDefinition, TaskMap } from "./types.ts";

/**
 * The `default` of every switch on a task's kind: it takes only `never`, so a kind added to
 * `TaskDefinition` and not handled there does not compile. At run time it is reached only by a
 * definition built around `pipeline()`, which is idem's own bug.
 */
export function unhandledKind(task: never): never {
  const kind = typeof task === "object" && task !== null ? (task as TaskDefinition).kind : task;
  throw new Error(`idem does not handle a task of kind ${JSON.stringify(kind)}`);
}

/**
 * The list a task is mapped over, or null: function and external tasks may be mapped (one
 * function call, or one remote job, per item); the other kinds never are.
 */
export function mapOf(task: { kind: string; map?: TaskMap | null }): TaskMap | null {
  return task.kind === "function" || task.kind === "external" ? task.map ?? null : null;
}

/** Whether the task is mapped by key over another mapped task (`items: { keysOf }`), and over which. */
export function keysOfMapped(task: { kind: string; map?: TaskMap | null }): string | null {
  const items = mapOf(task)?.items;
  return items && typeof items === "object" && "keysOf" in items ? items.keysOf : null;
}
