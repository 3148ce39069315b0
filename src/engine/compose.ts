import { join } from "node:path";
import { systemClock, type Clock } from "../core/model/clock.ts";
import type { Pipeline } from "../core/pipeline/types.ts";
import type { MigrateStateOptions } from "../store/migrate-state.ts";
import type { Store } from "../store/port.ts";
import type { Engine } from "./engine.ts";
import type { PipelineCheck } from "./project/catalog.ts";
import type { ResolvedConfig } from "./project/config.ts";
import type { ModuleImporter } from "./project/load-pipelines.ts";

export interface OpenProjectOptions {
  /**
   * Load the pipeline files. A surface that only reads the state store says false: its engine
   * knows no pipelines (`engine.pipeline(id)` fails), and the user's code never runs.
   */
  pipelines: boolean;
  /** How the project's files are imported (the CLI: its compiled cache); default plain `import()`. */
  importModule?: ModuleImporter;
  clock?: Clock;
  /**
   * Which clock `clock` is when it is not the system's (a test clock: `--now`, IDEM_NOW): every
   * run and audit entry this engine writes says so.
   */
  clockNote?: string;
  /** Told the secrets to mask before the store opens, so even an error opening it can be masked. */
  onSecrets?: (secrets: readonly string[]) => void;
}

/**
 * The composition root: the project as its config says, and the engine over it. It opens the
 * state store (IDEM_STATE_URL, else the config's `state`, else `<stateDir>/state.db`), migrates
 * it and creates the config's pools, loads the pipeline files into a catalog (a broken file stops
 * only itself), collects the secrets to mask, and hands all of it, with the config's numbers, to
 * one `Engine`, which then builds the scheduler, workers, watchdog and task hosts from the same
 * config. The engine owns the store: `engine.close()` closes it.
 */
export async function openProject(config: ResolvedConfig, options: OpenProjectOptions): Promise<Engine> {
  const clock = options.clock ?? systemClock;
  const catalog = options.pipelines
    ? await (await import("./project/catalog.ts")).PipelineCatalog.load(config.pipelinePaths, config.rootDir, await pinnedImporter(config, options.importModule), await pipelineCheck(config))
    : undefined;
  const [{ openStore }, { Engine }, { reportingStore, storeUnavailable }, { maskedStore }, { SecretMasker }] = await Promise.all([
    import("../store/open-store.ts"), import("./engine.ts"), import("../store/unavailable.ts"),
    import("./secrets/masked-store.ts"), import("./secrets/masker.ts"),
  ]);
  const location = stateLocation(config);
  const secrets = await projectSecrets(config, location);
  options.onSecrets?.(secrets);
  const busyTimeoutMs = config.stateBusyTimeoutMs;
  let opened: Store;
  try {
    opened = await openStore(location, { busyTimeoutMs });
  } catch (error) {
    throw storeUnavailable(error, location, busyTimeoutMs) ?? error;
  }
  const masked = maskedStore(reportingStore(opened, location, busyTimeoutMs), new SecretMasker(secrets));
  const store = options.clockNote ? (await import("./records/clock-marked-store.ts")).clockMarkedStore(masked, options.clockNote) : masked;
  try {
    await store.migrate();
    await store.ensurePools(Object.entries(config.pools).map(([name, slots]) => ({ name, slots })), clock.now());
  } catch (error) {
    await store.close();
    throw error;
  }
  return new Engine({
    store, ownsStore: true, clock, stateDir: config.stateDir, catalog, projectDir: config.rootDir, frozen: config.frozen,
    connections: config.connections, secrets, stateUrl: location,
    logMaxBytes: config.logMaxBytes, taskMemoryMb: config.taskMemoryMb,
    concurrency: config.concurrency, prefetch: config.prefetch, parallelism: config.parallelism, pools: config.pools, reloadMs: config.reloadMs,
    workerLeaseMs: config.workerLeaseMs, schedulerLeaseMs: config.schedulerLeaseMs, datasetWebhook: config.datasetWebhook, bundleCollection: config.bundleCollection,
    watch: {
      notifiers: config.notifiers, defaultNotify: config.defaultNotify, intervalMs: config.checkerIntervalMs,
      routes: config.alerts.routes, digest: config.alerts.digest, failing: config.alerts.failing, uiUrl: config.uiUrl, configFile: config.file,
      graceMs: config.didNotRunGraceMs, staleMs: config.checkerStaleMs,
    },
  });
}

/**
 * Every pipeline file of the project, each of which must load (`idem validate`), with every
 * problem of every file reported at once. It checks one thing more than the processes that run
 * pipelines: that each pool a task takes is declared in the config, and each notifier a promise
 * names. A running process lets such a task wait for a pool someone creates (`idem pools set`),
 * and an unknown notifier costs only its alerts (a notifier_failing incident), never the loads;
 * validate says the config lacks them.
 */
export async function loadProjectPipelines(config: ResolvedConfig, importModule?: ModuleImporter): Promise<Pipeline[]> {
  const [{ loadPipelines }, { undeclaredPoolProblems }, { unknownNotifierProblems }] = await Promise.all([
    import("./project/catalog.ts"), import("../core/pipeline/pools.ts"), import("../core/pipeline/notifier-names.ts"),
  ]);
  const runnable = await pipelineCheck(config);
  const pools = Object.keys(config.pools);
  const notifiers = Object.keys(config.notifiers);
  return loadPipelines(config.pipelinePaths, config.rootDir, importModule, (pipeline) => [
    ...runnable(pipeline), ...undeclaredPoolProblems(pipeline, pools), ...unknownNotifierProblems(pipeline, notifiers),
  ]);
}

/**
 * Pipeline files imported as their stored bundles, so that a run created here is pinned to the
 * code it was created with (docs/versions.md).
 */
async function pinnedImporter(config: ResolvedConfig, importModule: ModuleImporter | undefined): Promise<ModuleImporter> {
  const [{ bundledImporter }, { CodeLibrary }] = await Promise.all([import("./project/bundled-importer.ts"), import("./project/code-library.ts")]);
  return bundledImporter(new CodeLibrary(config.bundleDir, config.rootDir), importModule);
}

/** Where the state lives: IDEM_STATE_URL, else the config's `state`, else `<stateDir>/state.db`. */
function stateLocation(config: ResolvedConfig): string {
  return process.env.IDEM_STATE_URL?.trim() || config.state || join(config.stateDir, "state.db");
}

/**
 * The values idem masks: the config's named secrets, IDEM_SECRET_*, the state URL's password,
 * connections' passwords (by the variables they name, or as written when they name none), and
 * the variables notifiers name for their URLs, keys and passwords.
 */
async function projectSecrets(config: ResolvedConfig, location: string): Promise<string[]> {
  const [{ collectSecrets, referencedVariables }, { notifierSecretNames }] = await Promise.all([
    import("./secrets/masker.ts"), import("./freshness/notifiers/index.ts"),
  ]);
  const connections = Object.values(config.connections).flatMap((c) => ("postgres" in c ? [c] : []));
  const secrets = collectSecrets({
    names: [
      ...config.secrets, ...notifierSecretNames(config.notifiers), ...connections.flatMap((c) => [...referencedVariables(c.password), ...referencedVariables(c.postgres)]),
      ...(config.datasetWebhook ? [config.datasetWebhook.secretEnv] : []),
    ],
    stateUrl: location,
    urls: connections.map((c) => c.postgres),
  });
  secrets.push(...connections.flatMap((c) => (c.password && referencedVariables(c.password).length === 0 ? [c.password] : [])));
  return secrets;
}

/** A SQL task whose connection the config does not have stops its pipeline when the file loads. */
async function pipelineCheck(config: ResolvedConfig): Promise<PipelineCheck> {
  const { connectionProblems } = await import("./connections/connections.ts");
  return (pipeline) => connectionProblems(pipeline, config.connections);
}

/**
 * Moves an installation's state from its SQLite file to PostgreSQL (`idem migrate`): the one
 * request that opens two stores and no project. The store adapters copy; a surface asks here,
 * never a store. Returns the rows copied per table.
 */
export async function moveState(options: MigrateStateOptions): Promise<Map<string, number>> {
  const { migrateState } = await import("../store/migrate-state.ts");
  return migrateState(options);
}
