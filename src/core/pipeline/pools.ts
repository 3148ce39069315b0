import { DefinitionError } from "../model/errors.ts";
import { suggestion } from "../model/nearest-name.ts";
import type { Pipeline } from "./types.ts";

/**
 * Every pool a task takes is one the project declares (`pools` in idem.config.ts): a task that
 * names another would wait for a pool that never comes. One problem per task, about its `pool`.
 */
export function undeclaredPoolProblems(pipeline: Pick<Pipeline, "id" | "tasks">, declared: readonly string[]): DefinitionError[] {
  const problems: DefinitionError[] = [];
  for (const task of pipeline.tasks.values()) {
    const pool = task.policy.pool;
    if (pool === null || declared.includes(pool)) continue;
    const known = declared.length ? `pools: ${declared.join(", ")}` : "it declares none";
    const near = suggestion(pool, declared);
    problems.push(new DefinitionError(
      `pool "${pool}" is not declared in the config (${known})${near.startsWith(" (did you mean") ? near : ""}`,
      { pipeline: pipeline.id, task: task.id, key: ["tasks", task.id, "pool"] },
    ));
  }
  return problems;
}
