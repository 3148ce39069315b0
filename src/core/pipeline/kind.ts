import type { TaskDefinition } from "./types.ts";

/**
 * The `default` of every switch on a task's kind: it takes only `never`, so a kind added to
 * `TaskDefinition` and not handled there does not compile. At run time it is reached only by a
 * definition built around `pipeline()`, which is idem's own bug.
 */
export function unhandledKind(task: never): never {
  const kind = typeof task === "object" && task !== null ? (task as TaskDefinition).kind : task;
  throw new Error(`idem does not handle a task of kind ${JSON.stringify(kind)}`);
}
