import type { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import type { ChangeEvent } from "../../store/port.ts";
import { CREDENTIAL_RECHECK_MS, type AppDeps, type AppEnv } from "../env.ts";
import { watchCredentials } from "../auth/principal.ts";
import { FieldError } from "../problem.ts";
import { addRoute, type AnyRouteSpec } from "./route.ts";

/** A comment line now and then keeps proxies and the browser from taking a quiet stream for a dead one. */
const KEEPALIVE_MS = 15_000;

/** What a client receives for one change: `event:` is the kind, `id:` the feed id, `data:` this JSON. */
export function eventPayload(change: ChangeEvent): Record<string, unknown> {
  if (change.kind === "incident") {
    return {
      id: change.id, kind: "incident", key: change.incidentKey, incidentKind: change.incidentKind, pipelineId: change.pipelineId,
      dataset: change.dataset, businessDate: change.businessDate, state: change.state, open: change.state !== "resolved",
    };
  }
  return {
    id: change.id, kind: change.kind, runId: change.runId, pipelineId: change.pipelineId, businessDate: change.businessDate, state: change.state,
    ...(change.kind === "task" ? { taskId: change.taskId, tryNumber: change.tryNumber } : {}),
  };
}

export function eventRoutes(api: Hono<AppEnv>, registry: AnyRouteSpec[], { engine, credentialRecheckMs }: AppDeps): void {
  addRoute(api, registry, {
    method: "get", path: "/events", tag: "events",
    summary: "Server-sent events: run, task and incident changes. Reconnecting with Last-Event-ID replays what was missed; `reset` means reload; `revoked` (then the end of the stream) means the token was revoked",
    query: z.object({
      pipeline: z.string().optional().describe("only this pipeline's changes"),
      lastEventId: z.string().optional().describe("for clients that cannot send the Last-Event-ID header"),
    }),
    responds: { status: 200, type: "text/event-stream", description: "event: run|task|incident|reset, id: feed id, data: JSON" },
    handle: (c, { query }) => {
      if (query.pipeline) engine.pipeline(query.pipeline);
      const header = c.req.header("last-event-id") ?? query.lastEventId;
      let lastEventId: number | null = null;
      if (header !== undefined && header.trim() !== "") {
        lastEventId = Number(header);
        if (!Number.isSafeInteger(lastEventId) || lastEventId < 0) throw new FieldError("Last-Event-ID", `Last-Event-ID ${JSON.stringify(header)}: expected an id this stream sent`);
      }
      c.header("cache-control", "no-store");
      c.header("x-accel-buffering", "no");
      return streamSSE(c, async (out) => {
        // Writes go out one after another, in feed order.
        let writing: Promise<void> = out.writeSSE({ event: "hello", data: JSON.stringify({ lastEventId }), retry: 2000 });
        const send = (message: { event: string; data: string; id?: string }) => {
          writing = writing.then(() => out.writeSSE(message)).catch(() => {});
        };
        const unsubscribe = await engine.changeFeed().subscribe(lastEventId, {
          onChanges: (changes) => {
            for (const change of changes) {
              if (query.pipeline && change.pipelineId !== query.pipeline) continue;
              send({ event: change.kind, id: String(change.id), data: JSON.stringify(eventPayload(change)) });
            }
          },
          onReset: () => send({ event: "reset", data: "{}" }),
        });
        const keepalive = setInterval(() => {
          writing = writing.then(() => out.write(": keepalive\n\n")).then(() => {}).catch(() => {});
        }, KEEPALIVE_MS);
        await new Promise<void>((resolve) => {
          out.onAbort(resolve);
          // A revoked token (or the first token created, for the local user) ends the stream.
          const stopWatching = watchCredentials(c, credentialRecheckMs ?? CREDENTIAL_RECHECK_MS, () => {
            send({ event: "revoked", data: JSON.stringify({ detail: "the credentials of this stream were revoked; sign in again" }) });
            void writing.then(resolve);
          });
          out.onAbort(stopWatching);
        });
        clearInterval(keepalive);
        unsubscribe();
      });
    },
  });
}
