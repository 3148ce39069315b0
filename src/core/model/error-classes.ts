/**
 * The classes of failure idem records on an attempt: a closed set, so a surface or a rule can
 * match on them (the worker hands a `Cancelled` attempt back; a `LeaseLost` command is killed at
 * once). An exception thrown by task code is `TaskFailed`, its own name kept at the head of the
 * message ("TypeError: x is undefined"). docs/workers.md lists what each means.
 */
export const ERROR_CLASSES = [
  /** Task code threw (or a SQL statement failed); retried under the task's policy. */
  "TaskFailed",
  /** A data error (`DataError`, a failed check, a command's exit 65): never retried. */
  "DataError",
  /** The task is wrong as written (a SQL task naming an unknown parameter, a task removed from its file): never retried. */
  "DefinitionError",
  /** The pipeline's file changed since the worker loaded it: handed back untouched, the same try runs again. */
  "DefinitionChanged",
  /** The attempt ran past its timeout. */
  "Timeout",
  /** The worker shut down: the attempt is handed back, the same try runs again. */
  "Cancelled",
  /** The attempt's lease was taken away or could not be renewed: stopped so its retry runs alone. */
  "LeaseLost",
  /** Recorded by the store when a lease ran out with its worker presumed dead. */
  "LeaseExpired",
  /** The task host died under the attempt (process.exit, out of memory, a native crash). */
  "TaskCrashed",
  /** A command that could not start (not found, not executable). */
  "SpawnError",
  /** A command that ended with a non-zero exit code. */
  "ExitCode",
  /** A command killed by a signal it was not sent by idem. */
  "Signal",
  /** A summary that is not a JSON object. */
  "SummaryError",
  /** A summary over 64 KiB: the store keeps counts, not data. */
  "SummaryTooLarge",
  /** A sensor whose `sensorTimeout` passed with its condition unmet: never retried. */
  "SensorTimeout",
] as const;

export type ErrorClass = (typeof ERROR_CLASSES)[number];

/** Each class by name, for matching against the constant rather than a string literal. */
export const ErrorClass = Object.fromEntries(ERROR_CLASSES.map((c) => [c, c])) as { readonly [C in ErrorClass]: C };

export function isErrorClass(value: unknown): value is ErrorClass {
  return typeof value === "string" && (ERROR_CLASSES as readonly string[]).includes(value);
}
