import type { Context, Hono } from "hono";
import { z } from "zod";
import type { EmittedDatasetEvent, Engine } from "../../engine/engine.ts";
import { MAX_IDEMPOTENCY_KEY_LENGTH } from "../../engine/external-events.ts";
import type { ExternalEventSource } from "../../store/port.ts";
import type { AppDeps, AppEnv } from "../env.ts";
import { toApi } from "./json.ts";
import { addRoute, type AnyRouteSpec } from "./route.ts";
import { businessDate } from "./schemas.ts";

export const datasetParams = z.object({ name: z.string().min(1).describe("dataset name, as pipelines name it in produces, publishes, triggerOn or promises") });

/** What a producer sends, by the API and by the signed webhook alike. */
export const datasetEventBody = z.object({
  businessDate: businessDate.describe("the business date the dataset is ready for, YYYY-MM-DD"),
  idempotencyKey: z
    .string()
    .min(1)
    .max(MAX_IDEMPOTENCY_KEY_LENGTH)
    .regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, "no control characters")
    .describe("the producer's name for this delivery: sent again, it is the same event (the first one is answered, nothing is written)"),
  summary: z.unknown().optional().describe("any JSON kept with the event (counts, a file name), at most 64 KiB"),
});

/** `POST /datasets/{name}/events`: a producer outside idem says a dataset is ready. */
export function datasetEventRoutes(api: Hono<AppEnv>, registry: AnyRouteSpec[], { engine }: AppDeps): void {
  addRoute(api, registry, {
    method: "post", path: "/datasets/:name/events", tag: "datasets", action: true,
    summary: "Record that a dataset is ready for a business date (a producer outside idem): data-triggered pipelines run as for a publication",
    params: datasetParams,
    body: datasetEventBody.extend({ reason: z.string().max(2000).optional().describe("written to the audit log") }),
    responds: {
      status: 201,
      description: "{ event, created: true, audit }. A known idempotency key: 200 { event (the first), created: false, audit: null, ignored, note } with Idempotent-Replayed: true; nothing is written",
    },
    handle: (c, { params, body, principal }) => emitted(c, engine, params.name, { ...body, source: "api", actor: principal.actor }),
  });
}

/** Records the event and answers 201 with it, or 200 with the first event of a known key. */
export async function emitted(
  c: Context<AppEnv>,
  engine: Engine,
  dataset: string,
  request: z.output<typeof datasetEventBody> & { reason?: string; source: ExternalEventSource; actor: string },
): Promise<Response> {
  const result = await engine.emitDatasetEvent(dataset, request);
  if (result.created) return c.json(toApi({ event: result.event, created: true, audit: result.audit }), 201);
  c.header("Idempotent-Replayed", "true");
  return c.json(toApi({ event: result.event, created: false, audit: null, ignored: result.ignored, note: replayNote(result) }), 200);
}

function replayNote({ event, ignored }: EmittedDatasetEvent): string {
  const first = `idempotency key "${event.idempotencyKey}" of ${event.dataset} was first used at ${new Date(event.at).toISOString()} (event ${event.id}, by ${event.actor} via ${event.source}); nothing was recorded`;
  return ignored.length ? `${first}; this request's ${ignored.join(" and ")} differ from the first and were ignored` : first;
}
