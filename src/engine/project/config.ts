import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { DefinitionError, DefinitionErrors } from "../../core/model/errors.ts";
import { validateFrozenPeriods, type FrozenPeriod } from "../../core/policy/frozen.ts";
import { INCIDENT_KINDS, SEVERITIES } from "../../core/model/incidents.ts";
import type { AlertRoute } from "../../core/policy/alert-routing.ts";
import type { DigestPolicy, FailingPolicy } from "../../core/policy/alert-delivery.ts";
import { boolean, exactly, falseOnly, secretsByName, listOf, namedRecord, oneOf, oneWordOf, text, trueOnly, variants, wholeNumber, wholeNumberOr, type Check } from "./config-schema.ts";
import { bundleCollectionOf, DEFAULTS, type BundleCollectionSchedule } from "./defaults.ts";
import { locateConfigKey } from "./locate-key.ts";

/** The default cap of one attempt's log: 10 MiB (`logMaxBytes` in idem.config.ts). */
export const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024;

/**
 * The settings of each kind of notifier: where alerts go. Secrets are never written here: a
 * setting ending in `Env` names the environment variable that holds the value (read when an
 * alert is sent, checked when a long-running process starts, masked wherever idem writes). A
 * webhook's url and headers may name variables inline ("$OPS_WEBHOOK_URL", "${TOKEN}"). A
 * command's argv is passed as written: the command gets idem's environment plus IDEM_ALERT_*,
 * and a shell it starts expands `$NAME` itself (expanding the alert's text into argv would let
 * a message run code). Adding a kind here is a compile error wherever kinds are handled.
 */
export interface NotifierSettings {
  /** The watchdog's process log; `log` always exists. */
  log: true;
  command: readonly string[];
  /** A JSON POST; signed (HMAC-SHA256 over `timestamp.body`) when `signingSecretEnv` is given. */
  webhook: { url: string; headers?: Record<string, string>; timeoutMs?: number; signingSecretEnv?: string };
  /** A Slack incoming webhook: `urlEnv` names the variable holding its URL. */
  slack: { urlEnv: string; timeoutMs?: number };
  /** Mail through an SMTP server; `userEnv`/`passwordEnv` name the variables of its login. */
  email: { host: string; port?: number; secure?: boolean; userEnv?: string; passwordEnv?: string; from: string; to: readonly string[]; timeoutMs?: number };
  /** PagerDuty's Events API v2; `routingKeyEnv` names the variable holding the integration's routing key. */
  pagerduty: { routingKeyEnv: string; url?: string; source?: string; timeoutMs?: number };
}

export type NotifierKind = keyof NotifierSettings;

/** One notifier: `{ slack: { urlEnv: "SLACK_WEBHOOK_URL" } }`, `{ command: [...] }`, `{ log: true }`, ... */
export type NotifierConfig = { [K in NotifierKind]: { [P in K]: NotifierSettings[K] } }[NotifierKind];

/** How alerts are routed, grouped in bursts, and watched (`alerts` in idem.config.ts). */
export interface AlertSettings {
  /** Rules choosing notifiers by pipeline, dataset, owner, severity and kind; every matching rule counts. */
  routes?: AlertRoute[];
  /** At most `after` messages per notifier within `windowMs`; what does not fit goes in one digest. `false`: no digests. Default 5 per 60 s. */
  digest?: { after?: number; windowMs?: number } | false;
  /** A notifier failing `after` times in a row, or for `forMs`, is an incident told to `defaultNotify`. Default 3 times or 10 minutes. */
  failing?: { after?: number; forMs?: number };
}

export interface ResolvedAlertSettings {
  routes: AlertRoute[];
  digest: DigestPolicy | null;
  failing: FailingPolicy;
}

/**
 * A named database for SQL tasks and `ctx.connection(name)`. Strings may name environment
 * variables ("$WAREHOUSE_PASSWORD", "${PGHOST}"), read when the connection opens, so secrets
 * live in the environment; their values are masked wherever idem prints.
 */
export type ConnectionConfig =
  /** A DuckDB file, relative to the config file (":memory:" for a throwaway one). */
  | { duckdb: string }
  /** A SQLite file, relative to the config file. */
  | { sqlite: string }
  /** A postgres:// URL; `password` (usually "$SOME_VARIABLE") replaces the URL's; `schema` goes first on the search path. */
  | { postgres: string; password?: string; schema?: string };

/** What `idem.config.ts` may say. Paths are relative to the config file. */
export interface IdemConfig {
  /** Where state, logs and scratch files live. Default `.idem`. */
  stateDir?: string;
  /**
   * The state store: a postgres:// URL (optionally `?schema=name`) for many machines, or a SQLite
   * file (`sqlite:path`, relative to the config file). Default: `<stateDir>/state.db`.
   * The IDEM_STATE_URL environment variable overrides it.
   */
  state?: string;
  /** Pipeline files or folders of them. Default `pipelines`. */
  pipelines?: string | string[];
  /**
   * Where the bundles of pipeline files are kept (the code each run is pinned to, see
   * docs/versions.md): a directory every worker can read, for many machines. Default
   * `<stateDir>/bundles`.
   */
  bundles?: string;
  /**
   * Old bundles collected by the leading scheduler (docs/versions.md, "Collecting old bundles"):
   * how often (default every 24 h, first when it takes the lead) and the retention rule (default
   * the newest 3 versions, and 30 days), as `idem versions --collect` applies it. `false`: only
   * by hand.
   */
  collectBundles?: { everyMs?: number; keepNewest?: number; keepDays?: number } | false;
  /** Task instances of one run that may run at once in `idem run`, and per worker. Default 4. */
  concurrency?: number;
  /**
   * Attempts a worker claims ahead of its free slots and starts as slots free, so one claim
   * takes many. Each holds its lease and its pool slots while it waits. "auto" (the default):
   * twice the concurrency while the worker's recent tasks ran under a second, else none.
   */
  prefetch?: number | "auto";
  /** Task instances running at once across all workers. Default: no limit beyond the workers'. */
  parallelism?: number;
  /** Pools created when missing (slots); `idem pools set` changes them afterwards. */
  pools?: Record<string, number>;
  /** The default warehouse for `idem history`: `duckdb:<path>`, `sqlite:<path>` or a postgres:// URL. */
  warehouse?: string;
  /** Business dates no pipeline may rewrite without an explicit reason, e.g. a month closed by finance. */
  frozen?: FrozenPeriod[];
  /** Where alerts go, by name: `{ slack: { urlEnv: "SLACK_WEBHOOK_URL" } }`, `{ pagerduty: {...} }`, `{ email: {...} }`, `{ webhook: {...} }`, `{ command: [...] }`, `{ log: true }`. */
  notifiers?: Record<string, NotifierConfig>;
  /** Routing rules, digests of bursts, and when a failing notifier is an incident. */
  alerts?: AlertSettings;
  /** The web UI's address as people reach it ("https://idem.example.com"): alerts link to the run or pipeline there. */
  uiUrl?: string;
  /** Notifiers for incidents no promise names any for (did not run, failed runs). Default ["log"]. */
  defaultNotify?: string[];
  /** The checker counts as dead when its last pass is older than this. Default 60 s. */
  checkerStaleMs?: number;
  /** How often the watchdog checks promises and due runs (in whichever process holds its lease). Default 15 s. */
  checkerIntervalMs?: number;
  /**
   * A due interval with no run this long after it fired, and no scheduler progressing toward
   * it, did not run; no scheduler leading for this long is an incident. Default 10 minutes.
   */
  didNotRunGraceMs?: number;
  /** A worker that has not renewed an attempt's lease for this long is presumed dead. Default 30 s. */
  workerLeaseMs?: number;
  /** A scheduler that has not renewed the leader lease for this long is replaced. Default 15 s. */
  schedulerLeaseMs?: number;
  /**
   * Names of environment variables whose values are secrets: masked (as ***) in attempt logs,
   * error messages, summaries, incidents, alerts and the audit log. Every IDEM_SECRET_* variable,
   * the state URL's password and the variables that connections' passwords name are secrets too.
   */
  secrets?: string[];
  /** The most one attempt's log keeps: its first and last halves, with a marker between. Default 10 MiB. */
  logMaxBytes?: number;
  /** The heap limit of each task host process, in MiB: a task that needs more fails (TaskCrashed) alone. */
  taskMemoryMb?: number;
  /** How long a command waits for a locked SQLite state file before it gives up (exit code 3). Default 10 s. */
  stateBusyTimeoutMs?: number;
  /** How often the scheduler, workers and `idem run` look for added, changed and removed pipeline files. Default 2 s. */
  reloadMs?: number;
  /** Databases by name, for SQL tasks (`connection: "warehouse"`) and `ctx.connection("warehouse")`. */
  connections?: Record<string, ConnectionConfig>;
  /**
   * The signed webhook by which a system that can only call a URL says a dataset is ready
   * (`POST /api/v1/hooks/datasets/{name}`): the environment variable that holds the shared
   * secret (its value is masked like every secret), and how far a request's timestamp may be
   * from the server's clock (default 300 s). Without it, the webhook answers 404.
   */
  datasetWebhook?: DatasetWebhookConfig;
}

export interface DatasetWebhookConfig {
  secretEnv: string;
  toleranceSeconds?: number;
}

export interface ResolvedConfig {
  file: string | null;
  rootDir: string;
  stateDir: string;
  /** The store's location as given (a SQLite path made absolute), if the config names one. */
  state: string | undefined;
  pipelinePaths: string[];
  /** Where pipeline bundles are stored (`bundles`, else `<stateDir>/bundles`). */
  bundleDir: string;
  /** When and by which rule the scheduler collects old bundles; null: only by hand. */
  bundleCollection: BundleCollectionSchedule | null;
  concurrency: number;
  prefetch: number | "auto";
  parallelism: number | undefined;
  pools: Record<string, number>;
  workerLeaseMs: number;
  schedulerLeaseMs: number;
  frozen: FrozenPeriod[];
  warehouse: string | null;
  notifiers: Record<string, NotifierConfig>;
  alerts: ResolvedAlertSettings;
  uiUrl: string | null;
  defaultNotify: string[];
  checkerStaleMs: number;
  checkerIntervalMs: number;
  didNotRunGraceMs: number;
  secrets: string[];
  logMaxBytes: number;
  taskMemoryMb: number | undefined;
  stateBusyTimeoutMs: number;
  reloadMs: number;
  /** File paths made absolute; environment references still unread. */
  connections: Record<string, ConnectionConfig>;
  datasetWebhook: ResolvedDatasetWebhook | null;
}

/** The signed dataset webhook as the engine takes it: the secret is read from `secretEnv` at each request. */
export interface ResolvedDatasetWebhook {
  secretEnv: string;
  toleranceMs: number;
}

export const CONFIG_FILE_NAMES = ["idem.config.ts", "idem.config.mts", "idem.config.js", "idem.config.mjs"];

export function defineConfig(config: IdemConfig): IdemConfig {
  return config;
}

/** One check per kind of notifier: a kind missing here is a compile error. */
const NOTIFIER_SCHEMAS: Record<NotifierKind, Check> = {
  log: exactly({ log: trueOnly }),
  command: exactly({ command: listOf(text, 1) }),
  webhook: exactly({ webhook: exactly({ url: text, headers: namedRecord("header", text), timeoutMs: wholeNumber(1), signingSecretEnv: text }, ["url"]) }),
  slack: exactly({ slack: secretsByName({ url: "urlEnv" }, exactly({ urlEnv: text, timeoutMs: wholeNumber(1) }, ["urlEnv"])) }),
  email: exactly({
    email: secretsByName({ user: "userEnv", password: "passwordEnv" }, exactly({
      host: text, port: wholeNumber(1), secure: boolean, userEnv: text, passwordEnv: text, from: text, to: listOf(text, 1), timeoutMs: wholeNumber(1),
    }, ["host", "from", "to"])),
  }),
  pagerduty: exactly({ pagerduty: secretsByName({ routingKey: "routingKeyEnv" }, exactly({ routingKeyEnv: text, url: text, source: text, timeoutMs: wholeNumber(1) }, ["routingKeyEnv"])) }),
};

const configSchema: Check = exactly({
  stateDir: text,
  state: text,
  pipelines: oneOf(text, listOf(text, 1)),
  bundles: text,
  collectBundles: oneOf(exactly({ everyMs: wholeNumber(60_000), keepNewest: wholeNumber(1), keepDays: wholeNumber(0) }), falseOnly),
  concurrency: wholeNumber(1),
  prefetch: wholeNumberOr(0, "auto"),
  parallelism: wholeNumber(1),
  warehouse: text,
  frozen: listOf(exactly({ from: text, to: text, owner: text, reason: text }, ["from", "to", "owner", "reason"])),
  notifiers: namedRecord("notifier", variants("notifier", NOTIFIER_SCHEMAS)),
  alerts: exactly({
    routes: listOf(exactly({
      match: exactly({
        pipeline: oneOf(text, listOf(text, 1)),
        dataset: oneOf(text, listOf(text, 1)),
        owner: oneOf(text, listOf(text, 1)),
        severity: oneOf(oneWordOf(SEVERITIES), listOf(oneWordOf(SEVERITIES), 1)),
        kind: oneOf(oneWordOf(INCIDENT_KINDS), listOf(oneWordOf(INCIDENT_KINDS), 1)),
      }),
      notify: listOf(text, 1),
    }, ["match", "notify"])),
    digest: oneOf(exactly({ after: wholeNumber(1), windowMs: wholeNumber(1000) }), falseOnly),
    failing: exactly({ after: wholeNumber(1), forMs: wholeNumber(1000) }),
  }),
  uiUrl: text,
  defaultNotify: listOf(text),
  checkerStaleMs: wholeNumber(1000),
  checkerIntervalMs: wholeNumber(100),
  didNotRunGraceMs: wholeNumber(0),
  workerLeaseMs: wholeNumber(100),
  schedulerLeaseMs: wholeNumber(100),
  pools: namedRecord("pool", wholeNumber(0)),
  secrets: listOf(text),
  logMaxBytes: wholeNumber(1024),
  taskMemoryMb: wholeNumber(16),
  stateBusyTimeoutMs: wholeNumber(0),
  reloadMs: wholeNumber(100),
  connections: namedRecord(
    "connection",
    variants("connection", {
      duckdb: exactly({ duckdb: text }),
      sqlite: exactly({ sqlite: text }),
      postgres: exactly({ postgres: text, password: text, schema: text }),
    }),
  ),
  datasetWebhook: exactly({ secretEnv: text, toleranceSeconds: wholeNumber(1) }, ["secretEnv"]),
});

/**
 * Finds and loads the config: the given file, else the first config file name in `cwd` or the
 * nearest folder above it. `importModule` imports the (TypeScript) file; the host decides how.
 */
export async function loadConfig(cwd: string, explicitFile?: string, importModule: (file: string) => Promise<Record<string, unknown>> = importFile): Promise<ResolvedConfig> {
  const file = findConfig(cwd, explicitFile);
  assertEsModuleProject(file);
  let raw: unknown;
  try {
    const module = await importModule(file);
    raw = module.default ?? {};
  } catch (error) {
    if (error instanceof DefinitionError) throw error;
    throw new DefinitionError(`could not load: ${(error as Error).message.split("\n")[0]}`, { file });
  }
  const problems = configSchema(raw, "");
  if (problems.length > 0) {
    const source = readSource(file);
    const placed = problems.map((p) => new DefinitionError(p.message, { file, line: source === null ? undefined : locateConfigKey(source, p.key) }));
    throw placed.length === 1 ? placed[0]! : new DefinitionErrors(placed);
  }
  const config = raw as IdemConfig;
  const unknownNotifier = unknownNotifierNamed(config);
  if (unknownNotifier) {
    const source = readSource(file);
    throw new DefinitionError(unknownNotifier.message, { file, line: source === null ? undefined : locateConfigKey(source, unknownNotifier.key) });
  }
  const checkerStaleMs = config.checkerStaleMs ?? DEFAULTS.checkerStaleMs;
  const checkerIntervalMs = config.checkerIntervalMs ?? DEFAULTS.checkerIntervalMs;
  if (checkerIntervalMs >= checkerStaleMs) {
    throw new DefinitionError(`checkerIntervalMs: ${checkerIntervalMs} must be below checkerStaleMs (${checkerStaleMs}), or a passing checker looks dead`, { file });
  }
  const rootDir = dirname(file);
  const pipelines = config.pipelines ?? "pipelines";
  return {
    file,
    rootDir,
    stateDir: resolve(rootDir, config.stateDir ?? ".idem"),
    state: config.state === undefined || /^postgres(ql)?:\/\//i.test(config.state)
      ? config.state
      : resolve(rootDir, config.state.replace(/^sqlite:(\/\/)?/i, "")),
    pipelinePaths: (Array.isArray(pipelines) ? pipelines : [pipelines]).map((p) => resolve(rootDir, p)),
    bundleDir: config.bundles === undefined ? join(resolve(rootDir, config.stateDir ?? ".idem"), "bundles") : resolve(rootDir, config.bundles),
    bundleCollection: bundleCollectionOf(config.collectBundles),
    concurrency: config.concurrency ?? DEFAULTS.concurrency,
    prefetch: config.prefetch ?? "auto",
    parallelism: config.parallelism,
    pools: config.pools ?? {},
    workerLeaseMs: config.workerLeaseMs ?? DEFAULTS.workerLeaseMs,
    schedulerLeaseMs: config.schedulerLeaseMs ?? DEFAULTS.schedulerLeaseMs,
    frozen: withFile(file, () => validateFrozenPeriods(config.frozen)),
    warehouse: resolveWarehouse(config.warehouse, rootDir),
    notifiers: { log: { log: true }, ...config.notifiers },
    alerts: resolveAlerts(config.alerts),
    uiUrl: config.uiUrl?.replace(/\/+$/, "") ?? null,
    defaultNotify: config.defaultNotify ?? ["log"],
    checkerStaleMs,
    checkerIntervalMs,
    didNotRunGraceMs: config.didNotRunGraceMs ?? DEFAULTS.didNotRunGraceMs,
    secrets: config.secrets ?? [],
    logMaxBytes: config.logMaxBytes ?? DEFAULT_LOG_MAX_BYTES,
    taskMemoryMb: config.taskMemoryMb,
    stateBusyTimeoutMs: config.stateBusyTimeoutMs ?? DEFAULTS.stateBusyTimeoutMs,
    reloadMs: config.reloadMs ?? DEFAULTS.reloadMs,
    connections: Object.fromEntries(Object.entries(config.connections ?? {}).map(([name, c]) => [name, resolveConnection(c, rootDir)])),
    datasetWebhook: config.datasetWebhook
      ? { secretEnv: config.datasetWebhook.secretEnv, toleranceMs: (config.datasetWebhook.toleranceSeconds ?? DEFAULTS.datasetWebhookToleranceMs / 1000) * 1000 }
      : null,
  };
}

const importFile = (file: string) => import(pathToFileURL(file).href) as Promise<Record<string, unknown>>;

/** The explicit file, else the nearest config file in `cwd` or above. */
export function findConfig(cwd: string, explicitFile?: string): string {
  if (explicitFile) {
    const file = resolve(cwd, explicitFile);
    if (!existsSync(file)) throw new DefinitionError(`config file not found`, { file });
    return file;
  }
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const found = CONFIG_FILE_NAMES.map((name) => join(dir, name)).find((path) => existsSync(path));
    if (found) return found;
    if (dirname(dir) === dir) break;
  }
  throw new DefinitionError(`no idem.config.ts here or above (${resolve(cwd)})`, {}, { action: "create-project" });
}

/**
 * Config and pipeline files are ES modules. In a package that is not one (npm init writes
 * "type": "commonjs"), loading them fails with an obscure error; say what to change instead.
 */
function assertEsModuleProject(configFile: string): void {
  if (/\.m[jt]s$/.test(configFile)) return;
  for (let dir = dirname(configFile); ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      let type: unknown;
      try {
        type = (JSON.parse(readFileSync(manifest, "utf8")) as { type?: unknown }).type;
      } catch {
        return; // an unreadable package.json is for npm to report
      }
      if (type !== "module") throw new DefinitionError(`set "type": "module" in this package.json: idem's config and pipeline files are ES modules${type === undefined ? "" : ` (it says "type": ${JSON.stringify(type)})`}`, { file: manifest });
      return;
    }
    if (dirname(dir) === dir) return;
  }
}

function resolveConnection(connection: ConnectionConfig, rootDir: string): ConnectionConfig {
  if ("duckdb" in connection) return { duckdb: connection.duckdb === ":memory:" ? ":memory:" : resolve(rootDir, connection.duckdb) };
  if ("sqlite" in connection) return { sqlite: resolve(rootDir, connection.sqlite) };
  return connection;
}

function readSource(file: string): string | null {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

function withFile<T>(file: string | null, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof DefinitionError) throw new DefinitionError(error.message, { file: file ?? "idem.config.ts" });
    throw error;
  }
}

/** A route or `defaultNotify` naming a notifier the config does not have. */
function unknownNotifierNamed(config: IdemConfig): { key: string[]; message: string } | null {
  const known = new Set(["log", ...Object.keys(config.notifiers ?? {})]);
  const named: [string[], readonly string[]][] = [
    [["defaultNotify"], config.defaultNotify ?? []],
    ...(config.alerts?.routes ?? []).map((route, i): [string[], readonly string[]] => [["alerts", "routes", String(i), "notify"], route.notify]),
  ];
  for (const [key, names] of named) {
    const missing = names.find((name) => !known.has(name));
    const where = key.map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`)).join("").slice(1);
    if (missing !== undefined) return { key, message: `${where}: no notifier named ${JSON.stringify(missing)} (known: ${[...known].join(", ")})` };
  }
  return null;
}

function resolveAlerts(alerts: AlertSettings | undefined): ResolvedAlertSettings {
  const digest = alerts?.digest;
  return {
    routes: alerts?.routes ?? [],
    digest: digest === false ? null : { ...DEFAULTS.alertDigest, ...digest },
    failing: { ...DEFAULTS.notifierFailing, ...alerts?.failing },
  };
}

/** A relative file path in `duckdb:`/`sqlite:` is relative to the config file. */
function resolveWarehouse(location: string | undefined, rootDir: string): string | null {
  if (location === undefined) return null;
  const match = /^(duckdb|sqlite):(.*)$/.exec(location);
  return match ? `${match[1]}:${resolve(rootDir, match[2]!)}` : location;
}
