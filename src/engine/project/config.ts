import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { DefinitionError } from "../../core/model/errors.ts";
import { validateFrozenPeriods, type FrozenPeriod } from "../../core/policy/frozen.ts";

/** What `idem.config.ts` may say. Paths are relative to the config file. */
export interface IdemConfig {
  /** Where state, logs and scratch files live. Default `.idem`. */
  stateDir?: string;
  /** Pipeline files or folders of them. Default `pipelines`. */
  pipelines?: string | string[];
  /** Task instances of one run that may run at once in `idem run`, and per worker. Default 4. */
  concurrency?: number;
  /** Task instances running at once across all workers. Default: no limit beyond the workers'. */
  parallelism?: number;
  /** Pools created when missing (slots); `idem pools set` changes them afterwards. */
  pools?: Record<string, number>;
  /** Business dates no pipeline may rewrite without an explicit reason, e.g. a month closed by finance. */
  frozen?: FrozenPeriod[];
  /** A worker that has not renewed an attempt's lease for this long is presumed dead. Default 30 s. */
  workerLeaseMs?: number;
  /** A scheduler that has not renewed the leader lease for this long is replaced. Default 15 s. */
  schedulerLeaseMs?: number;
}

export interface ResolvedConfig {
  file: string | null;
  rootDir: string;
  stateDir: string;
  pipelinePaths: string[];
  concurrency: number;
  parallelism: number | undefined;
  pools: Record<string, number>;
  workerLeaseMs: number;
  schedulerLeaseMs: number;
  frozen: FrozenPeriod[];
}

export const CONFIG_FILE_NAMES = ["idem.config.ts", "idem.config.mts", "idem.config.js", "idem.config.mjs"];

export function defineConfig(config: IdemConfig): IdemConfig {
  return config;
}

const configSchema = z
  .object({
    stateDir: z.string().min(1).optional(),
    pipelines: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
    concurrency: z.number().int().min(1).optional(),
    parallelism: z.number().int().min(1).optional(),
    frozen: z.array(z.object({ from: z.string(), to: z.string(), reason: z.string().min(1) }).strict()).optional(),
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
  const rootDir = file ? dirname(file) : cwd;
  const pipelines = parsed.data.pipelines ?? "pipelines";
  return {
    file,
    rootDir,
    stateDir: resolve(rootDir, parsed.data.stateDir ?? ".idem"),
    pipelinePaths: (Array.isArray(pipelines) ? pipelines : [pipelines]).map((p) => resolve(rootDir, p)),
    concurrency: parsed.data.concurrency ?? 4,
    parallelism: parsed.data.parallelism,
    pools: parsed.data.pools ?? {},
    workerLeaseMs: parsed.data.workerLeaseMs ?? 30_000,
    schedulerLeaseMs: parsed.data.schedulerLeaseMs ?? 15_000,
    frozen: withFile(file, () => validateFrozenPeriods(parsed.data.frozen)),
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
