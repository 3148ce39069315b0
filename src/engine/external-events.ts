import type { Clock } from "../core/model/clock.ts";
import { ArgumentError, NotFoundError } from "../core/model/errors.ts";
import { parseBusinessDate } from "../core/time/dates.ts";
import { MAX_SUMMARY_BYTES, type AuditEntry, type DatasetStore, type ExternalDatasetEvent, type ExternalEventSource } from "../store/port.ts";
import { defaultActor, tellAudit, type Acting } from "./acting.ts";
import type { ResolvedDatasetWebhook } from "./project/config.ts";
import { webhookSignatureFault } from "./signing/webhook-signature.ts";

/** The audit action of an event from outside idem. */
export const DATASET_EVENT_ACTION = "dataset-event";
/** Keys are the producer's names for its deliveries (a job id, a file name, a date): short text. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

export interface DatasetEventRequest extends Acting {
  businessDate: string;
  /** The producer's name for this delivery: the same key again is the same event. */
  idempotencyKey: string;
  /** Any JSON the producer wants kept with the event (counts, a file name): at most 64 KiB. */
  summary?: unknown;
  source: ExternalEventSource;
}

export interface EmittedDatasetEvent {
  /** The event as first recorded under the key. */
  event: ExternalDatasetEvent;
  /** False when the key was known: nothing was written, and `event` is the first one. */
  created: boolean;
  /** The audit entry written with a new event. */
  audit: AuditEntry | null;
  /** For a known key: what this request said otherwise than the first (`businessDate`, `summary`), ignored. */
  ignored: ("businessDate" | "summary")[];
}

export interface ExternalEventsEnvironment {
  store: DatasetStore;
  clock: Clock;
  /** Datasets the loaded pipelines name. */
  knownDatasets: () => readonly string[];
  /** A new event may make a data-triggered run due: the scheduler hears of it. */
  wakeScheduler: () => void;
}

/**
 * An outside producer (an API call, the CLI, a signed webhook) says `dataset` is ready for a
 * business date. The event joins those producing tasks record, so data triggers treat both alike.
 * One event per (dataset, idempotency key): a sender that retries, or two that race, get the
 * first event back and write nothing.
 */
export async function emitDatasetEvent(env: ExternalEventsEnvironment, dataset: string, request: DatasetEventRequest): Promise<EmittedDatasetEvent> {
  const known = env.knownDatasets();
  if (!known.includes(dataset)) {
    throw new NotFoundError(
      "dataset",
      `unknown dataset "${dataset}": no pipeline produces, publishes, waits on or promises it` + (known.length ? ` (known: ${known.join(", ")})` : ""),
    );
  }
  try {
    parseBusinessDate(request.businessDate);
  } catch (error) {
    throw new ArgumentError("businessDate", (n) => `${n("businessDate")}: ${(error as Error).message}`);
  }
  const key = request.idempotencyKey;
  const keyFault = idempotencyKeyFault(key);
  if (keyFault) throw new ArgumentError("idempotencyKey", (n) => `${n("idempotencyKey")}: ${keyFault}`);
  const summary = request.summary === undefined || request.summary === null ? null : JSON.stringify(request.summary);
  if (summary !== null && Buffer.byteLength(summary) > MAX_SUMMARY_BYTES) {
    throw new ArgumentError("summary", (n) => `${n("summary")} is ${Buffer.byteLength(summary)} bytes; the store keeps at most ${MAX_SUMMARY_BYTES} (counts, not data)`);
  }
  const actor = request.actor ?? defaultActor();
  const at = env.clock.now();
  const recorded = await env.store.recordExternalDatasetEvent({
    dataset, businessDate: request.businessDate, idempotencyKey: key, source: request.source, actor, summary, at,
    audit: {
      at, actor, action: DATASET_EVENT_ACTION, pipelineId: null, reason: request.reason ?? null,
      details: { dataset, businessDate: request.businessDate, source: request.source, idempotencyKey: key },
    },
  });
  if (recorded.audit) tellAudit(request, recorded.audit);
  if (recorded.created) env.wakeScheduler();
  const ignored: EmittedDatasetEvent["ignored"] = [];
  if (!recorded.created) {
    if (recorded.event.businessDate !== request.businessDate) ignored.push("businessDate");
    if (recorded.event.summary !== summary) ignored.push("summary");
  }
  return { ...recorded, ignored };
}

/** Why a key cannot be one, or null. Control characters would make logs and headers lie. */
function idempotencyKeyFault(key: string): string | null {
  if (typeof key !== "string" || key.length === 0) return "give a non-empty key";
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) return `${key.length} characters; at most ${MAX_IDEMPOTENCY_KEY_LENGTH}`;
  const control = /[\u0000-\u001f\u007f-\u009f]/.exec(key);
  if (control) return `control character U+${control[0].charCodeAt(0).toString(16).padStart(4, "0").toUpperCase()} at position ${control.index + 1}`;
  return null;
}

/** Why a signed webhook request is not taken: no webhook configured, its secret not in the environment, or a signature that does not hold. */
export interface WebhookRefusal {
  kind: "off" | "no-secret" | "signature";
  message: string;
}

/**
 * Whether a webhook request proves it comes from a holder of the shared secret. The secret is
 * read from the environment at each request, never stored, and masked like every secret.
 */
export function datasetWebhookRefusal(
  hook: ResolvedDatasetWebhook | null,
  request: { signature: string | undefined; body: string; now: number; environment: NodeJS.ProcessEnv },
): WebhookRefusal | null {
  if (!hook) return { kind: "off", message: "no dataset webhook is configured (datasetWebhook in idem.config.ts)" };
  const secret = request.environment[hook.secretEnv];
  if (!secret) return { kind: "no-secret", message: `the dataset webhook's secret is not set: ${hook.secretEnv} is empty in the server's environment` };
  const fault = webhookSignatureFault({ secret, header: request.signature, body: request.body, now: request.now, toleranceMs: hook.toleranceMs });
  return fault ? { kind: "signature", message: fault } : null;
}
