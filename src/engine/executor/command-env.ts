import type { TaskDefinition } from "../../core/pipeline/types.ts";

/** The control plane's own variables: the state URL carries the store's password. */
const NEVER_INHERITED = ["IDEM_STATE_URL"];

/**
 * The environment a command starts from: by default the worker's, without the state URL; with
 * `env: { inherit: false, pass }` only the variables named in `pass`. The task's own variables
 * come on top.
 */
export function commandEnvironment(task: Pick<TaskDefinition, "env" | "envPolicy">, worker: NodeJS.ProcessEnv): Record<string, string> {
  const base: Record<string, string> = {};
  if (task.envPolicy && !task.envPolicy.inherit) {
    for (const name of task.envPolicy.pass) if (worker[name] !== undefined) base[name] = worker[name]!;
  } else {
    for (const [name, value] of Object.entries(worker)) {
      if (value !== undefined && !NEVER_INHERITED.includes(name)) base[name] = value;
    }
  }
  return { ...base, ...task.env };
}
