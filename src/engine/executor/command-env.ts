import type { CommandTask } from "../../core/pipeline/types.ts";
import { urlPassword } from "../secrets/masker.ts";

/**
 * The control plane's own variables, which task processes (commands and task hosts) do not
 * inherit: the state URL, and wherever the state store's password is in the environment (a
 * variable holding it or a URL with it, and PGPASSWORD when a PostgreSQL state URL has no
 * password of its own, for the driver takes it from there). A command gets one only by naming
 * it in `env.pass`.
 */
export function withheldVariables(env: NodeJS.ProcessEnv, stateUrl: string | null): string[] {
  const withheld = new Set(["IDEM_STATE_URL"]);
  const password = urlPassword(stateUrl);
  if (password) {
    // A short password would match ordinary values: then only a variable that is exactly it.
    const holds = (value: string) => password.length < 4 ? value === password : value.includes(password) || value.includes(encodeURIComponent(password));
    for (const [name, value] of Object.entries(env)) if (value && holds(value)) withheld.add(name);
  } else if (stateUrl && /^postgres(ql)?:\/\//i.test(stateUrl)) {
    withheld.add("PGPASSWORD");
  }
  return [...withheld];
}

/** The environment a task host starts from: the worker's, without the control plane's variables. */
export function taskProcessEnvironment(worker: NodeJS.ProcessEnv, withheld: readonly string[]): NodeJS.ProcessEnv {
  const env = { ...worker };
  for (const name of withheld) delete env[name];
  return env;
}

/**
 * The environment a command starts from: by default the worker's, without the withheld
 * variables; with `env: { inherit: false, pass }` only the variables named in `pass`. Names in
 * `pass` are handed on even when withheld: that is how a task asks for the state URL. The
 * task's own variables come on top.
 */
export function commandEnvironment(
  task: Pick<CommandTask, "env" | "envPolicy">,
  worker: NodeJS.ProcessEnv,
  withheld: readonly string[] = ["IDEM_STATE_URL"],
): Record<string, string> {
  const base: Record<string, string> = {};
  const pass = task.envPolicy?.pass ?? [];
  if (!task.envPolicy || task.envPolicy.inherit) {
    for (const [name, value] of Object.entries(worker)) {
      if (value !== undefined && !withheld.includes(name)) base[name] = value;
    }
  }
  for (const name of pass) if (worker[name] !== undefined) base[name] = worker[name]!;
  return { ...base, ...task.env };
}
