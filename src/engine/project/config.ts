import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { DefinitionError } from "../../core/model/errors.ts";
import { validateFrozenPeriods, type FrozenPeriod } from "../../core/policy/frozen.ts";
import type { NotifierConfig } from "../freshness/notifiers.ts";

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
  /** Task instances of one run that may run at once in `idem run`, and per worker. Default 4. */
  concurrency?: number;
  /** Task instances running at once across all workers. Default: no limit beyond the workers'. */
  parallelism?: number;
  /** Pools created when missing (slots); `idem pools set` changes them afterwards. */
  pools?: Record<string, number>;
  /** The default warehouse for `idem history`: `duckdb:<path>`, `sqlite:<path>` or a postgres:// URL. */
  warehouse?: string;
  /** Business dates no pipeline may rewrite without an explicit reason, e.g. a month closed by finance. */
  frozen?: FrozenPeriod[];
  /** Where alerts go, by name: `{ webhook: { url: "$OPS_WEBHOOK_URL" } }`, `{ command: [...] }`, `{ log: true }`. */
  notifiers?: Record<string, NotifierConfig>;
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
}

export interface ResolvedConfig {
  file: string | null;
  rootDir: string;
  stateDir: string;
  /** The store's location as given (a SQLite path made absolute), if the config names one. */
  state: string | undefined;
  pipelinePaths: string[];
  concurrency: number;
  parallelism: number | undefined;
  pools: Record<string, number>;
  workerLeaseMs: number;
  schedulerLeaseMs: number;
  frozen: FrozenPeriod[];
  warehouse: string | null;
  notifiers: Record<string, NotifierConfig>;
  defaultNotify: string[];
  checkerStaleMs: number;
  checkerIntervalMs: number;
  didNotRunGraceMs: number;
}

export const CONFIG_FILE_NAMES = ["idem.config.ts", "idem.config.mts", "idem.config.js", "idem.config.mjs"];

export function defineConfig(config: IdemConfig): IdemConfig {
  return config;
}

const configSchema = z
  .object({
    stateDir: z.string().min(1).optional(),
    state: z.string().min(1).optional(),
    pipelines: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
    concurrency: z.number().int().min(1).optional(),
    parallelism: z.number().int().min(1).optional(),
    warehouse: z.string().min(1).optional(),
    frozen: z.array(z.object({ from: z.string(), to: z.string(), reason: z.string().min(1) }).strict()).optional(),
    notifiers: z
      .record(
        z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]{0,99}$/, "a notifier name"),
        z.union([
          z.object({ webhook: z.object({ url: z.string().min(1), headers: z.record(z.string(), z.string()).optional(), timeoutMs: z.number().int().min(1).optional() }).strict() }).strict(),
          z.object({ command: z.array(z.string()).min(1) }).strict(),
          z.object({ log: z.literal(true) }).strict(),
        ]),
      )
      .optional(),
    defaultNotify: z.array(z.string()).optional(),
    checkerStaleMs: z.number().int().min(1000).optional(),
    checkerIntervalMs: z.number().int().min(100).optional(),
    didNotRunGraceMs: z.number().int().min(0).optional(),
    workerLeaseMs: z.number().int().min(100).optional(),
    schedulerLeaseMs: z.number().int().min(100).optional(),
    pools: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]{0,99}$/, "a pool name"), z.number().int().min(0)).optional(),
  })
  .strict();

/** Finds and loads the config: the given file, or the first config file name in `cwd`. */
export async function loadConfig(cwd: string, explicitFile?: string): Promise<ResolvedConfig> {
  const file = explicitFile
    ? resolve(cwd, explicitFile)
    : (CONFIG_FILE_NAMES.map((name) => resolve(cwd, name)).find((path) => existsSync(path)) ?? null);
  if (explicitFile && !existsSync(file!)) throw new DefinitionError(`config file not found`, { file: file! });
  let raw: unknown = {};
  if (file) {
    try {
      const module = await import(pathToFileURL(file).href);
      raw = module.default ?? {};
    } catch (error) {
      throw new DefinitionError(`could not load: ${(error as Error).message.split("\n")[0]}`, { file });
    }
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length ? issue.path.join(".") : "config";
    throw new DefinitionError(`${where}: ${issue.message}`, { file: file ?? "idem.config.ts" });
  }
  const checkerStaleMs = parsed.data.checkerStaleMs ?? 60_000;
  const checkerIntervalMs = parsed.data.checkerIntervalMs ?? 15_000;
  if (checkerIntervalMs >= checkerStaleMs) {
    throw new DefinitionError(`checkerIntervalMs: ${checkerIntervalMs} must be below checkerStaleMs (${checkerStaleMs}), or a passing checker looks dead`, { file: file ?? "idem.config.ts" });
  }
  const rootDir = file ? dirname(file) : cwd;
  const pipelines = parsed.data.pipelines ?? "pipelines";
  return {
    file,
    rootDir,
    stateDir: resolve(rootDir, parsed.data.stateDir ?? ".idem"),
    state: parsed.data.state === undefined || /^postgres(ql)?:\/\//i.test(parsed.data.state)
      ? parsed.data.state
      : resolve(rootDir, parsed.data.state.replace(/^sqlite:(\/\/)?/i, "")),
    pipelinePaths: (Array.isArray(pipelines) ? pipelines : [pipelines]).map((p) => resolve(rootDir, p)),
    concurrency: parsed.data.concurrency ?? 4,
    parallelism: parsed.data.parallelism,
    pools: parsed.data.pools ?? {},
    workerLeaseMs: parsed.data.workerLeaseMs ?? 30_000,
    schedulerLeaseMs: parsed.data.schedulerLeaseMs ?? 15_000,
    frozen: withFile(file, () => validateFrozenPeriods(parsed.data.frozen)),
    warehouse: resolveWarehouse(parsed.data.warehouse, file ? dirname(file) : cwd),
    notifiers: { log: { log: true }, ...(parsed.data.notifiers as Record<string, NotifierConfig> | undefined) },
    defaultNotify: parsed.data.defaultNotify ?? ["log"],
    checkerStaleMs,
    checkerIntervalMs,
    didNotRunGraceMs: parsed.data.didNotRunGraceMs ?? 10 * 60_000,
  };
}

function withFile<T>(file: string | null, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof DefinitionError) throw new DefinitionError(error.message, { file: file ?? "idem.config.ts" });
    throw error;
  }
}

/** A relative file path in `duckdb:`/`sqlite:` is relative to the config file. */
function resolveWarehouse(location: string | undefined, rootDir: string): string | null {
  if (location === undefined) return null;
  const match = /^(duckdb|sqlite):(.*)$/.exec(location);
  return match ? `${match[1]}:${resolve(rootDir, match[2]!)}` : location;
}
