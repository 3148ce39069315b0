import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { DefinitionError, DefinitionErrors, type ErrorPlace } from "../model/errors.ts";
import { isValidId } from "../model/ids.ts";
import { validateSeverityOverride } from "../model/incidents.ts";
import { findGraphProblems, downstreamMap, topologicalOrder } from "../graph/dag.ts";
import { TRIGGER_RULES } from "../policy/trigger-rules.ts";
import { validateFrozenPeriods } from "../policy/frozen.ts";
import { MAX_RESTATE_WINDOW, type RestatePolicy } from "../policy/restate.ts";
import { resolvePromise, type FreshnessPromise } from "./promise.ts";
import { parseDuration } from "../time/duration.ts";
import { assertTimeZone, parseBusinessDate, parseInstant } from "../time/dates.ts";
import { cron, manual, type Timetable } from "../time/timetable.ts";
import { hashCanonicalJson } from "./canonical-json.ts";
import { currentDefinitionSink, type InvalidPipeline } from "./definition-sink.ts";
import { defaultsProblems, pipelineOptionProblems, POLICY_KEYS, TASK_KIND_KEYS, TASK_KINDS, taskKeyProblems } from "./option-keys.ts";
import { keysOfMapped, mapOf, unhandledKind } from "./kind.ts";
import { DEFAULT_MAX_ITEMS } from "../policy/fan-out.ts";
import type {
  CatchupPolicy,
  CommandTask,
  FunctionTaskSpec,
  MapSpec,
  TaskMap,
  Params,
  Pipeline,
  PipelineOptions,
  SensorTask,
  SqlSource,
  SqlTask,
  TaskDefinition,
  TaskPolicy,
  TaskPolicyInput,
  SqlTaskSpec,
  ExternalTask,
  ExternalTaskSpec,
  FunctionTask,
  TaskSpec,
} from "./types.ts";

export const DEFAULT_POLICY: TaskPolicy = Object.freeze({
  retries: 0,
  retryDelayMs: 30_000,
  backoff: "fixed",
  maxRetryDelayMs: 3_600_000,
  jitter: 0,
  timeoutMs: null,
  triggerRule: "all_success",
  pool: null,
  slots: 1,
  priority: 0,
});

/** Shared by every task with no dependency, output or child (most tasks of a wide pipeline). */
const NONE: readonly string[] = Object.freeze([]);

const DEFAULT_DATA_ERROR_EXIT_CODES = [65];
const DEFAULT_KILL_GRACE_MS = 5_000;

type TaskList<P extends Params> = readonly (TaskSpec<string, P> & { id: string })[];

/**
 * Declare a pipeline. Every problem in the definition is reported at once, one line each,
 * naming the pipeline and task; nothing half-valid is returned.
 *
 *   pipeline("shop_orders", { schedule: daily({ at: "02:00", timezone: "Europe/London" }) }, {
 *     load_day: { run: loadDay, retries: 2 },
 *     check_day: { after: ["load_day"], run: checkDay },
 *   });
 */
export function pipeline<K extends string, P extends Params = Params>(
  id: string,
  options: PipelineOptions<P>,
  tasks: { [T in K]: TaskSpec<K, P> },
): Pipeline<P>;
export function pipeline<P extends Params = Params>(id: string, options: PipelineOptions<P>, tasks: TaskList<P>): Pipeline<P>;
export function pipeline<P extends Params>(
  id: string,
  options: PipelineOptions<P>,
  tasks: Record<string, TaskSpec<string, P>> | TaskList<P>,
): Pipeline<P> {
  const problems: DefinitionError[] = [];
  const pipelinePlace: ErrorPlace = { pipeline: isValidId(id) ? id : JSON.stringify(id) };
  const problem = (message: string, task?: string, key?: readonly string[]) =>
    problems.push(new DefinitionError(message, { ...pipelinePlace, ...(task ? { task } : {}), ...(key ? { key } : {}) }));
  /** Runs one check; a definition error it raises becomes a problem about `key`. */
  const attempt = <T>(key: readonly string[], fn: () => T, task?: string): T | undefined => {
    try {
      return fn();
    } catch (error) {
      if (error instanceof DefinitionError) {
        problem(stripPlace(error), task, error.place.key ? [...key, ...error.place.key] : key);
        return undefined;
      }
      throw error;
    }
  };
  const option = (name: string) => ["options", name];

  if (!isValidId(id)) problem(`invalid pipeline id: use letters, digits, _ and -, starting with a letter or _`);
  if (!options || typeof options !== "object") throw new DefinitionError("options must be an object", pipelinePlace);
  for (const { key, message } of pipelineOptionProblems(options)) problem(message, undefined, option(key));

  // A zone that is wrong is its own problem; the schedule is then read in UTC, so it is not reported twice.
  const zone = options.timezone === undefined ? undefined : attempt(option("timezone"), () => (assertTimeZone(options.timezone!), options.timezone!)) ?? "UTC";
  const schedule = attempt(option("schedule"), () => resolveSchedule(options.schedule, zone));
  const timezone = schedule?.timezone ?? "UTC";
  const start = options.start === undefined ? null : attempt(option("start"), () => parseBound(options.start!, timezone, "start"));
  const end = options.end === undefined ? null : attempt(option("end"), () => parseBound(options.end!, timezone, "end"));
  if (typeof start === "number" && typeof end === "number" && end <= start) problem(`end ${options.end} is not after start ${options.start}`, undefined, option("end"));
  const catchup: CatchupPolicy = options.catchup ?? "all";
  if (catchup !== "all" && catchup !== "latest") problem(`catchup must be "all" or "latest", not ${JSON.stringify(catchup)}`, undefined, option("catchup"));
  const maxActiveRuns = positiveInt(options.maxActiveRuns, 16, "maxActiveRuns", (m) => problem(m, undefined, option("maxActiveRuns")));
  const maxActiveTasks = positiveInt(options.maxActiveTasks, 64, "maxActiveTasks", (m) => problem(m, undefined, option("maxActiveTasks")));
  const triggerOn = attempt(option("triggerOn"), () => datasetNames(options.triggerOn, "triggerOn")) ?? [];
  const frozen = attempt(option("frozen"), () => validateFrozenPeriods(options.frozen)) ?? [];
  if (options.params !== undefined && (typeof options.params !== "object" || options.params === null || Array.isArray(options.params))) {
    problem("params must be an object of names and their default values", undefined, option("params"));
  }
  const severity = options.severity === undefined ? null : attempt(option("severity"), () => validateSeverityOverride(options.severity, "severity")) ?? null;
  const promises: FreshnessPromise[] = [];
  for (const [index, input] of (options.promises ?? []).entries()) {
    const resolved = attempt(["options", "promises", String(index)], () => resolvePromise(input, schedule?.timezone ?? "UTC"));
    if (resolved) promises.push(resolved);
  }
  let defaults = DEFAULT_POLICY;
  if (options.defaults !== undefined) {
    if (!options.defaults || typeof options.defaults !== "object") problem("defaults must be an object of task policies", undefined, option("defaults"));
    else {
      for (const { key, message } of defaultsProblems(options.defaults)) problem(message, undefined, ["options", "defaults", key]);
      defaults = Object.freeze(resolvePolicy(options.defaults, DEFAULT_POLICY, (message, key) => problem(message, undefined, ["options", "defaults", key])));
    }
  }

  // Specs are read where the user wrote them (no copy of each with its id): with 20,000 tasks,
  // what defining a pipeline allocates on the way is what the worker's RSS keeps.
  const specs: (readonly [string, TaskSpec<string, P>])[] = Array.isArray(tasks)
    ? (tasks as TaskList<P>).map((spec) => [spec.id, spec] as const)
    : Object.entries(tasks as Record<string, TaskSpec<string, P>>);
  if (specs.length === 0) problem("has no tasks");

  const definitions: TaskDefinition[] = [];
  for (const [taskId, spec] of specs) {
    if (!isValidId(taskId)) {
      problem(`invalid task id ${JSON.stringify(taskId)}: use letters, digits, _ and -, starting with a letter or _`, undefined, ["tasks", String(taskId)]);
      continue;
    }
    if (!spec || typeof spec !== "object") {
      problem("a task must be an object of options", taskId, ["tasks", taskId]);
      continue;
    }
    const report = (message: string, key: string) => problem(message, taskId, ["tasks", taskId, key]);
    for (const { key, message } of taskKeyProblems(spec)) report(message, key);
    // Kept even when a value is wrong (a stand-in takes its place): no pipeline is made while
    // there are problems, but the project's checks (pools, connections) read every task they can.
    const definition = resolveTask(taskId, spec, defaults, report);
    if (definition) definitions.push(definition);
  }
  for (const graphProblem of findGraphProblems(specs.map(([taskId, spec]) => ({ id: taskId, upstream: spec?.after ?? NONE })))) {
    problem(graphProblem.message, graphProblem.task, graphProblem.task ? ["tasks", graphProblem.task, "after"] : undefined);
  }

  for (const d of definitions) {
    const keysOf = keysOfMapped(d);
    if (keysOf === null) continue;
    const over = definitions.find((u) => u.id === keysOf);
    if (over && !mapOf(over)) problem(`map.items maps over task ${over.id}'s keys, and ${over.id} is not mapped`, d.id, ["tasks", d.id, "map"]);
  }

  for (const promise of promises) {
    const publishers = definitions.filter((d) => d.publishes === promise.dataset).map((d) => d.id);
    if (publishers.length !== 1) {
      problem(`promise ${promise.dataset}: needs exactly one task with publishes: "${promise.dataset}" (found ${publishers.length ? publishers.join(", ") : "none"})`, undefined, option("promises"));
    }
  }
  for (const d of definitions) {
    if (d.publishes && !promises.some((p) => p.dataset === d.publishes)) problem(`publishes "${d.publishes}" but the pipeline has no promise for it`, d.id, ["tasks", d.id, "publishes"]);
  }

  const restate = attempt(option("restate"), () => resolveRestate(options.restate));
  if (restate && schedule?.kind === "manual") problem("restate needs a schedule: a manual pipeline has no scheduled run to restate after", undefined, option("restate"));
  if (restate && definitions.length > 0 && definitions.every((d) => !d.restate)) {
    problem("restate: every task opts out (restate: false), so nothing would be restated", undefined, option("restate"));
  }

  if (problems.length > 0) {
    const sink = currentDefinitionSink();
    if (sink) {
      sink(problems, { id, tasks: new Map(definitions.map((d) => [d.id, d])) });
      return Object.freeze({ kind: "idem.invalid-pipeline", id } satisfies InvalidPipeline) as unknown as Pipeline<P>;
    }
    throw problems.length === 1 ? problems[0] : new DefinitionErrors(problems);
  }

  const downstream = downstreamMap(definitions);
  for (const d of definitions) d.downstream = downstream.get(d.id) ?? NONE;
  const byId = new Map(definitions.map((d) => [d.id, d]));
  const ordered: ReadonlyMap<string, TaskDefinition> = new Map(topologicalOrder(definitions).map((taskId) => [taskId, byId.get(taskId)!]));
  const head = {
    id,
    schedule: schedule!.toJSON(),
    start,
    end,
    catchup,
    maxActiveRuns,
    maxActiveTasks,
    params: options.params ?? {},
    triggerOn,
    frozen,
    // Severity says how to alert, not what runs: like the owner, it is not part of the version.
    promises: promises.map(({ severity: _, ...p }) => ({ ...p, completeness: p.completenessJson })),
    restate: restate ?? undefined,
  };
  return Object.freeze({
    kind: "idem.pipeline" as const,
    id,
    description: options.description ?? "",
    owner: options.owner ?? null,
    severity,
    tags: [...(options.tags ?? [])],
    schedule: schedule!,
    start: start ?? null,
    end: end ?? null,
    catchup,
    params: (options.params ?? {}) as P,
    maxActiveRuns,
    maxActiveTasks,
    triggerOn,
    frozen,
    promises,
    restate: restate ?? null,
    tasks: ordered,
    version: hashCanonicalJson(describePipeline(head, ordered)).slice(0, 16),
    // Made on each read (only stored with a new version, and shown): a second, JSON-shaped copy
    // of every task would double what the pipeline holds in every worker and task host.
    get definition() {
      return describePipeline(head, ordered);
    },
  });
}

export function isPipeline(value: unknown): value is Pipeline {
  return !!value && typeof value === "object" && (value as { kind?: unknown }).kind === "idem.pipeline";
}

function resolveSchedule(schedule: PipelineOptions<Params>["schedule"], timezone: string | undefined): Timetable {
  if (schedule === undefined || schedule === "manual") return manual({ timezone: timezone ?? "UTC" });
  if (typeof schedule === "string") return cron(schedule, { timezone: timezone ?? "UTC" });
  if (schedule && typeof schedule === "object" && typeof schedule.intervalAt === "function") return schedule;
  throw new DefinitionError(`schedule must be a timetable (daily(), cron(), ...), a cron string or "manual"`);
}

/** A date names a whole local day: start owns it from its first instant, end owns it through its last. */
function parseBound(value: string, timezone: string, which: "start" | "end"): number {
  if (typeof value !== "string") throw new DefinitionError(`${which} must be a date (YYYY-MM-DD) or an ISO instant`);
  try {
    if (/^\d{4}-\d{2}-\d{2}$/.test(value)) parseBusinessDate(value);
  } catch (error) {
    throw new DefinitionError(`${which}: ${(error as Error).message}`);
  }
  const instant = parseInstant(value, timezone);
  if (which === "end" && /^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const [y, m, d] = value.split("-").map(Number) as [number, number, number];
    const next = new Date(Date.UTC(y, m - 1, d + 1)).toISOString().slice(0, 10);
    return parseInstant(next, timezone);
  }
  return instant;
}

/** A problem about one key of the place being read (a task, the pipeline's defaults). */
type Report = (message: string, key: string) => void;

/** Reads one key; a definition error becomes a problem about it, and the fallback stands in. */
function read<T>(report: Report, key: string, fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch (error) {
    if (!(error instanceof DefinitionError)) throw error;
    report(error.message, key);
    return fallback;
  }
}

/** The task as defined, each problem reported about its key; null only when its kind cannot be told. */
function resolveTask<P extends Params>(id: string, spec: TaskSpec<string, P>, defaults: TaskPolicy, report: Report): TaskDefinition | null {
  const problem = report;
  const kinds = TASK_KINDS.filter((kind) => (spec as unknown as Record<string, unknown>)[TASK_KIND_KEYS[kind].marker] !== undefined);
  if (kinds.length !== 1) {
    report("needs exactly one of `run` (a function), `command` (an argv array), `sensor` (a condition), `sql` (a statement or { file }) or `external` (a remote job: submit, poll, cancel)", kinds.length ? TASK_KIND_KEYS[kinds[0]!].marker : "");
    return null;
  }
  const kind = kinds[0]!;
  if (kind === "function" && typeof (spec as { run: unknown }).run !== "function") problem("`run` must be a function", "run");
  const policy = POLICY_KEYS.some((field) => spec[field] !== undefined) ? resolvePolicy(spec, defaults, problem) : defaults;
  const publishes = spec.publishes === undefined ? null : read(problem, "publishes", () => datasetNames([spec.publishes!], "publishes")[0]!, null);
  const produces = read(problem, "produces", () => datasetNames(spec.produces, "produces"), []);
  const produced = spec.produces === undefined && publishes === null ? NONE : [...new Set([...produces, ...(publishes ? [publishes] : [])])];
  const restate = spec.restate ?? true;
  if (typeof restate !== "boolean") problem(`restate must be true or false, not ${JSON.stringify(spec.restate)}`, "restate");
  if (spec.after !== undefined && !Array.isArray(spec.after)) problem("after must be a list of task ids", "after");
  const base = {
    id,
    description: spec.description ?? "",
    upstream: Array.isArray(spec.after) && spec.after.length ? [...spec.after] : NONE,
    downstream: NONE,
    policy,
    killGraceMs: spec.killGrace === undefined ? DEFAULT_KILL_GRACE_MS : read(problem, "killGrace", () => parseDuration(spec.killGrace!, "killGrace"), 0),
    // Publishing a dataset produces it: its data triggers fire without a second declaration.
    produces: produced,
    publishes,
    restate,
  };
  // Object.assign onto `base`, never a spread into a new literal: in a loop, V8 gives each object
  // made by `{ ...base, more }` a hidden class of its own (about 400 bytes a task, kept).
  switch (kind) {
    case "function":
      return Object.assign(base, { kind, run: (spec as { run: FunctionTask["run"] }).run, map: resolveMap(spec as FunctionTaskSpec<string, P>, base.upstream, problem) });
    case "sql":
      return Object.assign(base, { kind }, resolveSql(spec as SqlTaskSpec<string>, problem));
    case "sensor":
      return Object.assign(base, { kind }, resolveSensor(spec as Extract<TaskSpec<string, P>, { sensor: unknown }>, problem));
    case "command":
      return Object.assign(base, { kind }, resolveCommand(spec as Extract<TaskSpec<string, P>, { command: unknown }>, problem));
    case "external":
      return Object.assign(base, { kind }, resolveExternal(spec as ExternalTaskSpec<string, P>, policy, base.upstream, problem));
    default:
      return unhandledKind(kind);
  }
}

function resolveExternal<P extends Params>(spec: ExternalTaskSpec<string, P>, policy: TaskPolicy, upstream: readonly string[], problem: Report): Pick<ExternalTask, "external" | "externalPolicy" | "map"> {
  const job = spec.external as unknown as Record<string, unknown> | null;
  if (typeof job !== "object" || job === null) {
    problem("`external` must be a job with `submit`, `poll` and `cancel` functions (a ready-made adapter: slurmJob, httpJob, sparkSubmitJob)", "external");
  } else {
    const missing = ["submit", "poll", "cancel"].filter((name) => typeof job[name] !== "function");
    if (missing.length) problem(`\`external\` lacks ${missing.map((name) => `\`${name}\``).join(", ")}: a job needs submit(ctx, key), poll(handle) and cancel(handle) functions`, "external");
  }
  const pollIntervalMs = read(problem, "pollInterval", () => parseDuration(spec.pollInterval ?? "30s", "pollInterval"), 1);
  if (pollIntervalMs === 0) problem("pollInterval must be more than 0", "pollInterval");
  const pollBackoff = spec.pollBackoff ?? true;
  if (typeof pollBackoff !== "boolean") problem(`pollBackoff must be true or false, not ${JSON.stringify(pollBackoff)}`, "pollBackoff");
  const holdPoolWhileRemote = spec.holdPoolWhileRemote ?? false;
  if (typeof holdPoolWhileRemote !== "boolean") {
    problem(`holdPoolWhileRemote must be true or false, not ${JSON.stringify(holdPoolWhileRemote)}`, "holdPoolWhileRemote");
  } else if (holdPoolWhileRemote && policy.pool === null) {
    problem("holdPoolWhileRemote needs a pool: set `pool` (and `slots`) for the remote job to hold", "holdPoolWhileRemote");
  }
  return {
    external: spec.external,
    externalPolicy: {
      pollIntervalMs,
      pollBackoff,
      maxPollIntervalMs: read(problem, "maxPollInterval", () => parseDuration(spec.maxPollInterval ?? "10m", "maxPollInterval"), 0),
      holdPoolWhileRemote: holdPoolWhileRemote === true,
    },
    map: resolveMap(spec, upstream, problem),
  };
}

function resolveMap<P extends Params>(spec: { map?: MapSpec<string, P> }, upstream: readonly string[], problem: Report): TaskMap | null {
  const map = spec.map;
  if (map === undefined) return null;
  if (!map || typeof map !== "object") {
    problem("map must be an object: { items, key?, maxItems?, maxActive? }", "map");
    return null;
  }
  const unknown = Object.keys(map).filter((k) => !["items", "key", "maxItems", "maxActive"].includes(k));
  if (unknown.length) problem(`map: unknown option ${unknown.map((k) => JSON.stringify(k)).join(", ")} (items, key, maxItems, maxActive)`, "map");
  const items = map.items as TaskMap["items"] | undefined;
  if (typeof items !== "function") {
    if (items && typeof items === "object" && "keysOf" in items && typeof items.keysOf === "string") {
      if (!upstream.includes(items.keysOf)) problem(`map.items maps over task ${items.keysOf}'s keys: add ${JSON.stringify(items.keysOf)} to after`, "map");
    } else if (!items || typeof items !== "object" || !("task" in items) || typeof items.task !== "string" || typeof items.field !== "string") {
      problem("map.items must be a function of the context, { task, field } (an upstream task's summary field) or { keysOf } (a mapped task's keys)", "map");
    } else if (!upstream.includes(items.task)) {
      problem(`map.items reads task ${items.task}'s summary: add ${JSON.stringify(items.task)} to after`, "map");
    }
  }
  if (map.key !== undefined && typeof map.key !== "function") problem("map.key must be a function of an item returning its key", "map");
  const maxItems = positiveInt(map.maxItems, DEFAULT_MAX_ITEMS, "map.maxItems", (m) => problem(m, "map"));
  const maxActive = map.maxActive === undefined ? null : positiveInt(map.maxActive, 1, "map.maxActive", (m) => problem(m, "map"));
  return { items: items as TaskMap["items"], key: map.key ?? null, maxItems, maxActive };
}

function resolveSensor<P extends Params>(sensor: Extract<TaskSpec<string, P>, { sensor: unknown }>, problem: Report): Pick<SensorTask, "sensor" | "sensorPolicy"> {
  if (typeof sensor.sensor !== "function") problem("`sensor` must be a function returning true when the condition is met", "sensor");
  const mode = sensor.mode ?? "reschedule";
  if (mode !== "reschedule" && mode !== "poke") problem(`sensor mode must be "reschedule" or "poke", not ${JSON.stringify(mode)}`, "mode");
  const pokeIntervalMs = read(problem, "pokeInterval", () => parseDuration(sensor.pokeInterval ?? "60s", "pokeInterval"), 1);
  if (pokeIntervalMs === 0) problem("pokeInterval must be more than 0", "pokeInterval");
  return {
    sensor: sensor.sensor,
    sensorPolicy: {
      pokeIntervalMs,
      pokeBackoff: sensor.pokeBackoff ?? false,
      maxPokeIntervalMs: read(problem, "maxPokeInterval", () => parseDuration(sensor.maxPokeInterval ?? "1h", "maxPokeInterval"), 0),
      timeoutMs: read(problem, "sensorTimeout", () => parseDuration(sensor.sensorTimeout ?? "24h", "sensorTimeout"), 0),
      softFail: sensor.softFail ?? false,
      mode,
    },
  };
}

function resolveCommand<P extends Params>(cmd: Extract<TaskSpec<string, P>, { command: unknown }>, problem: Report): Pick<CommandTask, "command" | "cwd" | "dataErrorExitCodes" | "env" | "envPolicy"> {
  const command = cmd.command as unknown;
  if (typeof command !== "function") {
    if (!Array.isArray(command) || command.length === 0 || !command.every((a) => typeof a === "string")) {
      problem("`command` must be a non-empty array of strings (argv) or a function returning one", "command");
    }
  }
  const codes = cmd.dataErrorExitCodes ?? DEFAULT_DATA_ERROR_EXIT_CODES;
  if (!Array.isArray(codes) || !codes.every((c) => Number.isInteger(c) && c > 0 && c < 256)) {
    problem("`dataErrorExitCodes` must be exit codes 1..255", "dataErrorExitCodes");
  }
  return {
    command: cmd.command as CommandTask["command"],
    cwd: cmd.cwd,
    dataErrorExitCodes: [...codes],
    ...read(problem, "env", () => commandEnv(cmd.env), {}),
  };
}

function resolveSql(spec: SqlTaskSpec<string>, problem: Report): Pick<SqlTask, "sql" | "connection" | "check"> {
  if (typeof spec.connection !== "string" || spec.connection === "") problem("a SQL task needs `connection`: the name of a connection in idem.config.ts", spec.connection === undefined ? "sql" : "connection");
  if (spec.check !== undefined && typeof spec.check !== "boolean") problem("`check` must be true or false", "check");
  // The stand-in is never run: a pipeline with a problem is not made (checks read only `connection`).
  return { sql: read(problem, "sql", () => sqlOf(spec.sql), { text: "", file: null }), connection: spec.connection, check: spec.check ?? false };
}

function sqlOf(given: SqlTaskSpec<string>["sql"]): SqlSource {
  let sql: SqlSource;
  if (typeof given === "string") {
    if (given.trim() === "") throw new DefinitionError("`sql` is empty");
    sql = { text: given, file: null };
  } else if (given && typeof given === "object" && (typeof given.file === "string" || given.file instanceof URL)) {
    // A relative path is relative to the project (the folder of idem.config.ts); a file URL
    // (new URL("./load.sql", import.meta.url)) is relative to the pipeline file.
    const file = given.file instanceof URL ? fileURLToPath(given.file) : given.file;
    if (!file.endsWith(".sql")) throw new DefinitionError(`sql file ${JSON.stringify(file)}: expected a .sql file`);
    sql = { text: null, file };
  } else throw new DefinitionError("`sql` must be a statement or { file: \"path.sql\" }");
  return sql;
}

function commandEnv(env: unknown): Pick<CommandTask, "env" | "envPolicy"> {
  if (env === undefined) return {};
  const strings = (value: unknown) => typeof value === "object" && value !== null && Object.values(value).every((v) => typeof v === "string");
  if (typeof env === "object" && env !== null && typeof (env as { inherit?: unknown }).inherit === "boolean") {
    const spec = env as { inherit: boolean; pass?: unknown; set?: unknown };
    const unknownKeys = Object.keys(spec).filter((k) => !["inherit", "pass", "set"].includes(k));
    if (unknownKeys.length) throw new DefinitionError(`\`env\`: unknown key ${unknownKeys[0]} (inherit, pass, set)`);
    if (spec.pass !== undefined && (!Array.isArray(spec.pass) || !spec.pass.every((p) => typeof p === "string"))) {
      throw new DefinitionError("`env.pass` must be an array of variable names");
    }
    if (spec.set !== undefined && !strings(spec.set)) throw new DefinitionError("`env.set` must map names to strings");
    return { env: spec.set as Record<string, string> | undefined, envPolicy: { inherit: spec.inherit, pass: [...((spec.pass as string[]) ?? [])] } };
  }
  if (!strings(env)) throw new DefinitionError("`env` must map names to strings, or be { inherit, pass, set }");
  return { env: env as Record<string, string> };
}

/** The task policy `input` sets over `defaults`; each wrong value is reported about its key, and the default stands in. */
export function resolvePolicy(input: TaskPolicyInput, defaults: TaskPolicy, report: Report): TaskPolicy {
  const retries = input.retries ?? defaults.retries;
  if (!Number.isInteger(retries) || retries < 0) report(`retries must be a whole number >= 0, not ${retries}`, "retries");
  const backoff = input.backoff ?? defaults.backoff;
  if (backoff !== "fixed" && backoff !== "exponential") report(`backoff must be "fixed" or "exponential", not ${JSON.stringify(backoff)}`, "backoff");
  const triggerRule = input.triggerRule ?? defaults.triggerRule;
  if (!TRIGGER_RULES.includes(triggerRule)) {
    report(`unknown trigger rule ${JSON.stringify(triggerRule)} (one of ${TRIGGER_RULES.join(", ")})`, "triggerRule");
  }
  const jitterInput = input.jitter ?? defaults.jitter;
  const jitter = jitterInput === true ? 0.1 : jitterInput === false ? 0 : jitterInput;
  if (typeof jitter !== "number" || !(jitter >= 0 && jitter <= 1)) report(`jitter must be true, false or a fraction 0..1, not ${jitterInput}`, "jitter");
  const pool = input.pool === undefined ? defaults.pool : input.pool;
  if (pool !== null && !isValidId(pool)) report(`invalid pool name ${JSON.stringify(pool)}`, "pool");
  const slots = input.slots ?? defaults.slots;
  if (!Number.isInteger(slots) || slots < 1) report(`slots must be a whole number >= 1, not ${slots}`, "slots");
  const priority = input.priority ?? defaults.priority;
  if (!Number.isInteger(priority)) report(`priority must be a whole number, not ${priority}`, "priority");
  const timeout = input.timeout === undefined ? defaults.timeoutMs : input.timeout;
  const timeoutMs = timeout === null ? null : read(report, "timeout", () => parseDuration(timeout, "timeout"), null);
  if (timeoutMs === 0) report("timeout must be more than 0 (or null for none)", "timeout");
  return {
    retries,
    retryDelayMs: input.retryDelay === undefined ? defaults.retryDelayMs : read(report, "retryDelay", () => parseDuration(input.retryDelay!, "retryDelay"), defaults.retryDelayMs),
    backoff,
    maxRetryDelayMs: input.maxRetryDelay === undefined ? defaults.maxRetryDelayMs : read(report, "maxRetryDelay", () => parseDuration(input.maxRetryDelay!, "maxRetryDelay"), defaults.maxRetryDelayMs),
    jitter: jitter as number,
    timeoutMs,
    triggerRule,
    pool,
    slots,
    priority,
  };
}

/** The JSON that the version hashes and the store keeps: tasks in their topological order. */
function describePipeline(head: Record<string, unknown>, tasks: ReadonlyMap<string, TaskDefinition>): Record<string, unknown> {
  return { ...head, tasks: [...tasks.values()].map(describeTask) };
}

/**
 * One task's JSON. Its keys are in the order they had when a task was one flat record (shared
 * keys, then command, sensor and SQL ones), and each kind writes only its own: the text hashed
 * into graph versions of existing projects stays the same (test/core/pipeline/kind-versions.test.ts).
 */
function describeTask(task: TaskDefinition): Record<string, unknown> {
  const head = { id: task.id, kind: task.kind, upstream: [...task.upstream].sort(), policy: task.policy };
  const tail = {
    killGraceMs: task.killGraceMs,
    produces: task.produces.length ? [...task.produces].sort() : undefined,
    publishes: task.publishes ?? undefined,
    restate: task.restate ? undefined : false,
  };
  switch (task.kind) {
    case "function":
      // A task that is not mapped says nothing of it: graph versions made before fan-out stay as they were.
      return task.map ? { ...head, ...tail, map: describeMap(task.map) } : { ...head, ...tail };
    case "command":
      return {
        ...head,
        command: typeof task.command === "function" ? "<function>" : task.command,
        cwd: task.cwd,
        env: task.env ? Object.keys(task.env).sort() : undefined,
        envPolicy: task.envPolicy,
        dataErrorExitCodes: task.dataErrorExitCodes,
        ...tail,
      };
    case "sensor":
      return { ...head, ...tail, sensorPolicy: task.sensorPolicy };
    case "external": {
      // Said only when set, like a map: graph versions of external tasks made before stay as they were.
      const { holdPoolWhileRemote, ...externalPolicy } = task.externalPolicy;
      return {
        ...head, ...tail, adapter: task.external.adapter ?? "custom", externalPolicy,
        ...(holdPoolWhileRemote ? { holdPoolWhileRemote } : {}),
        ...(task.map ? { map: describeMap(task.map) } : {}),
      };
    }
    case "sql":
      return {
        ...head,
        ...tail,
        // a file's name, not its absolute path: the version must not depend on where the project is
        sql: task.sql.file === null ? task.sql.text : { file: basename(task.sql.file) },
        connection: task.connection,
        check: task.check || undefined,
      };
    default:
      return unhandledKind(task);
  }
}

function describeMap(map: TaskMap): Record<string, unknown> {
  return {
    items: typeof map.items === "function" ? "<function>" : "keysOf" in map.items ? { keysOf: map.items.keysOf } : { task: map.items.task, field: map.items.field },
    key: map.key ? "<function>" : undefined,
    maxItems: map.maxItems,
    maxActive: map.maxActive ?? undefined,
  };
}

const DATASET_NAME = /^[A-Za-z_][A-Za-z0-9_.\/-]{0,199}$/;

function datasetNames(value: readonly string[] | undefined, what: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new DefinitionError(`${what} must be a list of dataset names`);
  for (const name of value) {
    if (typeof name !== "string" || !DATASET_NAME.test(name)) {
      throw new DefinitionError(`${what}: invalid dataset name ${JSON.stringify(name)} (letters, digits, _ . / -)`);
    }
  }
  return [...new Set(value)];
}

function resolveRestate(input: RestatePolicy | undefined): RestatePolicy | null {
  if (input === undefined) return null;
  if (!input || typeof input !== "object" || Array.isArray(input)) {
    throw new DefinitionError(`restate must be { last: N } (N intervals before each scheduled one), not ${JSON.stringify(input)}`);
  }
  const unknown = Object.keys(input).filter((k) => k !== "last");
  if (unknown.length) throw new DefinitionError(`restate: unknown option ${unknown.map((k) => JSON.stringify(k)).join(", ")} (only "last")`);
  const last = input.last;
  if (!Number.isInteger(last) || last < 1 || last > MAX_RESTATE_WINDOW) {
    throw new DefinitionError(`restate.last must be a whole number 1..${MAX_RESTATE_WINDOW}, not ${JSON.stringify(last)}`);
  }
  return { last };
}

function positiveInt(value: number | undefined, fallback: number, name: string, problem: (m: string) => void): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    problem(`${name} must be a whole number >= 1, not ${value}`);
    return fallback;
  }
  return value;
}

/** Errors raised by helpers carry no place; re-raise them with the task's. */
function stripPlace(error: DefinitionError): string {
  return error.message.replace(/^(pipeline [^,:]+(, task [^:]+)?: )/, "");
}
