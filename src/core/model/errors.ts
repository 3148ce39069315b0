/**
 * Errors that carry where they happened. Each renders as one line a user can act on;
 * the CLI maps the class to an exit code (definition/usage -> 2, run failure -> 1).
 */
export interface ErrorPlace {
  pipeline?: string;
  task?: string;
  file?: string;
  line?: number;
  /**
   * The key the problem is about, as a path through the `pipeline(id, options, tasks)` call:
   * `["options", "defaults", "retries"]`, `["tasks", "load", "retry"]`. Not shown: a loader turns it into `line`.
   */
  key?: readonly string[];
}

export class IdemError extends Error {
  readonly place: ErrorPlace;
  /** What the operator can do about it: the message ends with it in the engine's words. */
  readonly remedy: Remedy | null;
  readonly #reason: string;
  constructor(message: string, place: ErrorPlace = {}, remedy: Remedy | null = null) {
    super(prefix(place) + message + (remedy ? `; ${remedyInEngineWords(remedy)}` : ""));
    this.name = new.target.name;
    this.place = place;
    this.remedy = remedy;
    this.#reason = prefix(place) + message;
  }

  /** The message with its remedy as a surface says it (the CLI: the command that does it). */
  withRemedy(say: RemedyWords): string {
    return this.remedy ? `${this.#reason}; ${say(this.remedy)}` : this.message;
  }
}

/**
 * Something an operator can do about a refusal, named by what it does, never by how a surface
 * does it: the engine knows neither flags nor commands. Each surface says it its own way
 * (`withRemedy`): the CLI as the command line, the HTTP API in the engine's words.
 */
export type Remedy =
  /** A pool a task needs does not exist. */
  | { action: "create-pool"; pool: string }
  /** A run exists already: clearing it runs it again. */
  | { action: "clear-run"; runId: string }
  /** No config file was found where the project was looked for. */
  | { action: "create-project" }
  /** A token name matched none: the live ones are listed. */
  | { action: "list-tokens" };

/** How a surface says a remedy. */
export type RemedyWords = (remedy: Remedy) => string;

function remedyInEngineWords(remedy: Remedy): string {
  switch (remedy.action) {
    case "create-pool":
      return `create pool ${remedy.pool} with the slots it should have, or add it to \`pools\` in idem.config.ts`;
    case "clear-run":
      return `clear run ${remedy.runId} to run it again`;
    case "create-project":
      return "create a project there, or name its config file";
    case "list-tokens":
      return "list the live tokens for their names";
  }
}

/** A pipeline, schedule or config that cannot be accepted as written. */
export class DefinitionError extends IdemError {}

/** Several definition problems found at once: one line each. */
export class DefinitionErrors extends DefinitionError {
  readonly problems: DefinitionError[];
  constructor(problems: DefinitionError[]) {
    super(problems.map((p) => p.message).join("\n"));
    this.problems = problems;
  }
}

/** The state store cannot be used: locked by another process, or out of reach. */
export class StoreUnavailableError extends IdemError {}

/** A command-line or API argument that is wrong (unknown pipeline, bad date flag, ...). */
export class UsageError extends IdemError {}

/**
 * The data itself is wrong: a failed check, a reconciliation mismatch, a parse error.
 * Retrying cannot help, so an attempt that throws one is failed with no further tries.
 */
export class DataError extends IdemError {
  readonly details: unknown;
  constructor(message: string, details?: unknown, place: ErrorPlace = {}) {
    super(message, place);
    this.details = details;
  }
}

/** `file:line: pipeline p, task t: `, as a compiler says where (editors jump to `file:line:`). */
function prefix(place: ErrorPlace): string {
  const where = place.file ? `${place.line ? `${place.file}:${place.line}` : place.file}: ` : "";
  const parts: string[] = [];
  if (place.pipeline) parts.push(`pipeline ${place.pipeline}`);
  if (place.task) parts.push(`task ${place.task}`);
  return where + (parts.length ? parts.join(", ") + ": " : "");
}

/** What a request named does not exist; `what` says which kind of thing, for surfaces to point at the right field. */
export class NotFoundError extends UsageError {
  readonly what: "pipeline" | "run" | "task" | "attempt" | "backfill" | "pool" | "token" | "incident" | "dataset" | "codeVersion";
  constructor(what: NotFoundError["what"], message: string, place: ErrorPlace = {}, remedy: Remedy | null = null) {
    super(message, place, remedy);
    this.what = what;
  }
}

/** A manual run asked for an interval that has not ended: like the backfill planner's "in the future". */
export class IntervalNotEndedError extends UsageError {}

/** The request is valid but the state forbids it now (the run exists already, an attempt is running, ...). */
export class ConflictError extends UsageError {}

/** How a surface calls an argument of the engine's (the CLI: `maxActiveRuns` -> `--max-active-runs`). */
export type ArgumentNames = (argument: string) => string;

/**
 * An argument of a request is wrong, said in the engine's words: `end 2026-09-01 is not after
 * start ...`, `maxActiveRuns 0: expected ...`. `argument` is the one at fault; a surface renders
 * the message with its own names for the arguments (`describe`): the CLI its flags, the HTTP API
 * its fields (which are the engine's names), so the engine never knows either.
 */
export class ArgumentError extends UsageError {
  readonly argument: string;
  readonly #phrase: (name: ArgumentNames) => string;

  constructor(argument: string, phrase: (name: ArgumentNames) => string, place: ErrorPlace = {}) {
    super(phrase((a) => a), place);
    this.argument = argument;
    this.#phrase = phrase;
  }

  /** The message with each argument named as `name` says. */
  describe(name: ArgumentNames): string {
    return prefix(this.place) + this.#phrase(name);
  }
}
