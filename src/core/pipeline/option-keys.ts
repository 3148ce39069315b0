import { suggestion } from "../model/nearest-name.ts";
import type { PipelineOptions, TaskKind, TaskPolicyInput } from "./types.ts";

/**
 * The keys each place of a pipeline definition takes, so that a key written in the wrong place
 * (`retry` for `retries`, `sensorTimeout` on a function task, `retries` among the pipeline's
 * options) is a problem, never silently ignored. `satisfies` ties each list to its type: a key
 * added to the type and not here fails to compile.
 */
export const POLICY_KEYS = ["retries", "retryDelay", "backoff", "maxRetryDelay", "jitter", "timeout", "triggerRule", "pool", "slots", "priority"] as const satisfies readonly (keyof TaskPolicyInput)[];

export const PIPELINE_OPTION_KEYS = [
  "schedule", "timezone", "start", "end", "catchup", "defaults", "params", "description", "owner", "severity", "tags",
  "maxActiveRuns", "maxActiveTasks", "triggerOn", "frozen", "promises", "restate",
] as const satisfies readonly (keyof PipelineOptions)[];

/** Every task takes these, whatever its kind (`id` names a task in the list form). */
const COMMON_TASK_KEYS = ["id", "after", "description", "killGrace", "produces", "publishes", "restate", ...POLICY_KEYS] as const;

/** The key that makes a task of each kind, and the keys only that kind takes. */
export const TASK_KIND_KEYS: Record<TaskKind, { marker: string; own: readonly string[] }> = {
  function: { marker: "run", own: ["run", "map"] },
  command: { marker: "command", own: ["command", "cwd", "env", "dataErrorExitCodes"] },
  sensor: { marker: "sensor", own: ["sensor", "pokeInterval", "pokeBackoff", "maxPokeInterval", "sensorTimeout", "softFail", "mode"] },
  sql: { marker: "sql", own: ["sql", "connection", "check"] },
  external: { marker: "external", own: ["external", "pollInterval", "pollBackoff", "maxPollInterval", "holdPoolWhileRemote", "map"] },
};

export const TASK_KINDS = Object.keys(TASK_KIND_KEYS) as TaskKind[];

/** A key out of place, and the key it is about. */
export interface KeyProblem {
  key: string;
  message: string;
}

/** Keys of the pipeline's options that it does not take. */
export function pipelineOptionProblems(options: object): KeyProblem[] {
  const problems: KeyProblem[] = [];
  for (const key of Object.keys(options)) {
    if ((PIPELINE_OPTION_KEYS as readonly string[]).includes(key)) continue;
    if ((POLICY_KEYS as readonly string[]).includes(key) || COMMON_TASK_KEYS.includes(key as never)) {
      problems.push({ key, message: `\`${key}\` is a task option, not a pipeline option: set it on each task${(POLICY_KEYS as readonly string[]).includes(key) ? " or in `defaults`" : ""}` });
    } else {
      problems.push({ key, message: `unknown pipeline option \`${key}\`${suggestion(key, PIPELINE_OPTION_KEYS)}` });
    }
  }
  return problems;
}

/** Keys of the pipeline's `defaults` that are not a task policy. */
export function defaultsProblems(defaults: object): KeyProblem[] {
  return Object.keys(defaults)
    .filter((key) => !(POLICY_KEYS as readonly string[]).includes(key))
    .map((key) => ({ key, message: `\`defaults\` takes task policies only (${POLICY_KEYS.join(", ")}), not \`${key}\`${nearSuggestion(key, POLICY_KEYS)}` }));
}

/** Keys a task does not take: unknown ones, and those of another kind of task. */
export function taskKeyProblems(spec: object): KeyProblem[] {
  const keys = Object.keys(spec).filter((key) => (spec as Record<string, unknown>)[key] !== undefined);
  const kinds = TASK_KINDS.filter((kind) => keys.includes(TASK_KIND_KEYS[kind].marker));
  // With no kind or two, the task's kind is the problem (reported by the definition); keys are checked against every kind.
  const kind = kinds.length === 1 ? kinds[0]! : null;
  const allowed = [...COMMON_TASK_KEYS, ...(kind ? TASK_KIND_KEYS[kind].own : TASK_KINDS.flatMap((k) => TASK_KIND_KEYS[k].own))];
  const problems: KeyProblem[] = [];
  for (const key of keys) {
    if (allowed.includes(key)) continue;
    const owner = TASK_KINDS.find((k) => TASK_KIND_KEYS[k].own.includes(key));
    if (owner && kind) {
      problems.push({ key, message: `\`${key}\` is an option of ${owner} tasks, and this is ${/^[aeiou]/.test(kind) ? "an" : "a"} ${kind} task (\`${TASK_KIND_KEYS[kind].marker}\`)` });
    } else if ((PIPELINE_OPTION_KEYS as readonly string[]).includes(key) && !allowed.includes(key)) {
      problems.push({ key, message: `\`${key}\` is a pipeline option, not a task option` });
    } else {
      problems.push({ key, message: `unknown task option \`${key}\`${suggestion(key, allowed)}` });
    }
  }
  return problems;
}

function nearSuggestion(key: string, known: readonly string[]): string {
  const text = suggestion(key, known);
  return text.startsWith(" (did you mean") ? text : "";
}
