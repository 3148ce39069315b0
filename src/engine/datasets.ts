import type { Pipeline } from "../core/pipeline/types.ts";
import type { DatasetEvent } from "../store/port.ts";
import type { EngineContext } from "./engine-context.ts";
import { datasetWebhookRefusal, emitDatasetEvent, type DatasetEventRequest, type EmittedDatasetEvent, type WebhookRefusal } from "./external-events.ts";
import type { Page, Pages } from "./pages.ts";
import type { ResolvedDatasetWebhook } from "./project/config.ts";
import { notifyScheduler } from "./worker/wakeup.ts";

export interface DatasetInfo {
  name: string;
  producedBy: { pipelineId: string; taskId: string }[];
  publishedBy: { pipelineId: string; taskId: string }[];
  /** Pipelines that get a run when it is produced. */
  triggers: string[];
  /** Pipelines that promise its freshness. */
  promisedBy: string[];
}

/** Datasets: which pipelines produce, publish, wait on and promise each, and the events that say one is ready. */
export class Datasets {
  readonly #e: Pick<EngineContext, "store" | "clock" | "stateDir" | "catalog">;
  readonly #pages: Pages;
  readonly #webhook: ResolvedDatasetWebhook | null;

  constructor(context: Pick<EngineContext, "store" | "clock" | "stateDir" | "catalog">, pages: Pages, webhook: ResolvedDatasetWebhook | null) {
    this.#e = context;
    this.#pages = pages;
    this.#webhook = webhook;
  }

  /** Datasets the loaded pipelines name: who produces and publishes each, who waits on it, its promise. */
  list(): DatasetInfo[] {
    return datasetsOf(this.#e.catalog.pipelines());
  }

  /** A producer outside idem says a dataset is ready for a business date; data triggers take it as a publication. */
  async emit(dataset: string, request: DatasetEventRequest): Promise<EmittedDatasetEvent> {
    const { store, clock, stateDir } = this.#e;
    const environment = { store, clock, knownDatasets: () => this.list().map((d) => d.name), wakeScheduler: () => notifyScheduler(stateDir) };
    return emitDatasetEvent(environment, dataset, request);
  }

  /** Why a signed dataset webhook request is refused (no webhook, no secret, a signature that does not hold), or null. */
  webhookRefusal(request: { signature: string | undefined; body: string }): WebhookRefusal | null {
    return datasetWebhookRefusal(this.#webhook, { ...request, now: this.#e.clock.now(), environment: process.env });
  }

  async eventsPage(query: { dataset?: string; limit: number; after?: number }): Promise<Page<DatasetEvent, number>> {
    return this.#pages.datasetEvents(query);
  }
}

function datasetsOf(pipelines: readonly Pipeline[]): DatasetInfo[] {
  const byName = new Map<string, DatasetInfo>();
  const entry = (name: string) => {
    let found = byName.get(name);
    if (!found) byName.set(name, (found = { name, producedBy: [], publishedBy: [], triggers: [], promisedBy: [] }));
    return found;
  };
  for (const pipeline of pipelines) {
    for (const task of pipeline.tasks.values()) {
      for (const d of task.produces) entry(d).producedBy.push({ pipelineId: pipeline.id, taskId: task.id });
      if (task.publishes) entry(task.publishes).publishedBy.push({ pipelineId: pipeline.id, taskId: task.id });
    }
    for (const d of pipeline.triggerOn) entry(d).triggers.push(pipeline.id);
    for (const promise of pipeline.promises) entry(promise.dataset).promisedBy.push(pipeline.id);
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}
