import type { Hono } from "hono";
import { stream } from "hono/streaming";
import { z } from "zod";
import type { AuditEntry, TaskInstanceRecord } from "../../store/port.ts";
import { CREDENTIAL_RECHECK_MS, type AppDeps, type AppEnv } from "../env.ts";
import { watchCredentials } from "../auth/principal.ts";
import { toApi } from "./json.ts";
import { MAX_MAPPED_PAGE } from "../../engine/mapped-instances.ts";
import { addRoute, type AnyRouteSpec } from "./route.ts";
import { attemptParams, flag, reason, runParams, taskParams } from "./schemas.ts";

const openFrozenReason = z.string().trim().min(1).optional().describe("clear a run of a frozen date anyway; why");
const codeChoice = z.enum(["same", "latest"]).optional().describe("the code it runs again on: same (the run's own code version, the default) or latest (the pipeline as loaded now)");

/** Largest log slice one request returns. */
const MAX_LOG_SLICE = 1024 * 1024;
/** How often a followed log is read again while its attempt runs. */
const FOLLOW_POLL_MS = 250;

export function runRoutes(api: Hono<AppEnv>, registry: AnyRouteSpec[], { engine, credentialRecheckMs }: AppDeps): void {
  addRoute(api, registry, {
    method: "get", path: "/runs/:runId", tag: "runs", summary: "A run: interval, trigger, who and why, and its task instances",
    params: runParams,
    responds: { status: 200, description: "{ run, tasks }" },
    handle: async (c, { params }) => {
      const run = await engine.run(params.runId);
      return c.json(toApi({ run, tasks: await engine.taskInstances(run.runId) }));
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/runs/:runId/tasks", tag: "runs", summary: "The run's task instances, in task order",
    params: runParams,
    responds: { status: 200, description: "{ items: [task instance] }" },
    handle: async (c, { params }) => c.json(toApi({ items: await engine.taskInstances(params.runId) })),
  });

  addRoute(api, registry, {
    method: "get", path: "/runs/:runId/attempts", tag: "runs", summary: "Every attempt of every task of the run (a Gantt's bars)",
    params: runParams,
    responds: { status: 200, description: "{ items: [attempt] }" },
    handle: async (c, { params }) => c.json(toApi({ items: await engine.attempts(params.runId) })),
  });

  addRoute(api, registry, {
    method: "get", path: "/runs/:runId/why", tag: "runs", summary: "Why the run is not running, in words (also for a run that does not exist yet)",
    params: runParams,
    responds: { status: 200, description: "{ lines: [string] }" },
    handle: async (c, { params }) => c.json({ lines: await engine.why(params.runId) }),
  });

  addRoute(api, registry, {
    method: "get", path: "/runs/:runId/audit", tag: "audit",
    summary: "The run's audit trail, newest first: every restatement (and refusal), trigger, clear, skip and mark, with actor and reason",
    params: runParams,
    query: z.object({
      action: z.union([z.string(), z.array(z.string())]).optional()
        .transform((v) => (v === undefined ? undefined : (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(",")).map((s) => s.trim()).filter(Boolean)))
        .describe("only these actions, e.g. restate,restate-refused (comma-separated or repeated)"),
      limit: z.coerce.number().int().min(1).max(1000).default(100).describe("entries at most (1-1000)"),
    }),
    responds: { status: 200, description: "{ items: [audit entry] }" },
    handle: async (c, { params, query }) => c.json(toApi({ items: await engine.runAudit(params.runId, { actions: query.action, limit: query.limit }) })),
  });

  addRoute(api, registry, {
    method: "get", path: "/runs/:runId/tasks/:taskId", tag: "runs", summary: "A task instance and every attempt of it",
    params: taskParams,
    responds: { status: 200, description: "{ task, attempts }" },
    handle: async (c, { params }) => {
      const task = await requireTask(params.runId, params.taskId);
      return c.json(toApi({ task, attempts: await engine.attempts(params.runId, params.taskId) }));
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/runs/:runId/tasks/:taskId/instances", tag: "runs",
    summary: "A mapped task's instances, a page at a time in key order (keyset: after is the last key of the page before)",
    params: taskParams,
    query: z.object({
      after: z.string().min(1).optional().describe("the keys after this one: the next of the page before"),
      prefix: z.string().min(1).optional().describe("only keys starting with this"),
      state: z.union([z.string(), z.array(z.string())]).optional()
        .transform((v) => (v === undefined ? undefined : (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(",")).map((s) => s.trim()).filter(Boolean)))
        .describe("only instances in these states (comma-separated or repeated)"),
      limit: z.coerce.number().int().min(1).max(MAX_MAPPED_PAGE).default(100).describe(`instances at most (1-${MAX_MAPPED_PAGE})`),
    }),
    responds: { status: 200, description: "{ items: [{ taskId, key, position, item, state, tryNumber, reason, summary }], next }" },
    handle: async (c, { params, query }) =>
      c.json(toApi(await engine.mappedInstances(params.runId, params.taskId, { after: query.after, keyPrefix: query.prefix, states: query.state, limit: query.limit }))),
  });

  addRoute(api, registry, {
    method: "get", path: "/runs/:runId/tasks/:taskId/why", tag: "runs", summary: "Why the task instance is not running, in words",
    params: taskParams,
    responds: { status: 200, description: "{ lines: [string] }" },
    handle: async (c, { params }) => c.json({ lines: await engine.why(params.runId, params.taskId) }),
  });

  addRoute(api, registry, {
    method: "get", path: "/runs/:runId/tasks/:taskId/attempts", tag: "runs", summary: "The attempts of a task instance",
    params: taskParams,
    responds: { status: 200, description: "{ items: [attempt] }" },
    handle: async (c, { params }) => {
      await requireTask(params.runId, params.taskId);
      return c.json(toApi({ items: await engine.attempts(params.runId, params.taskId) }));
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/runs/:runId/tasks/:taskId/attempts/:try/log", tag: "logs",
    summary: "An attempt's log: a byte range as JSON (default), the whole file (download=true), or followed while the attempt runs (follow=true)",
    params: attemptParams,
    query: z.object({
      offset: z.coerce.number().int().min(0).default(0).describe("first byte"),
      length: z.coerce.number().int().min(1).max(MAX_LOG_SLICE).default(64 * 1024).describe("bytes at most"),
      download: flag.describe("the whole log as a text/plain attachment"),
      follow: flag.describe("text/plain from offset, streamed as it grows, until the attempt ends"),
    }),
    responds: { status: 200, description: "{ offset, size, nextOffset, ended, text } (or text/plain)" },
    handle: async (c, { params, query }) => {
      const at = (offset: number, length: number) => engine.logRange(params.runId, params.taskId, params.try, { offset, length });
      if (query.download) {
        const first = await at(0, MAX_LOG_SLICE);
        const name = `${params.runId}.${params.taskId}.try-${params.try}.log`.replace(/[^\w.@-]/g, "_");
        c.header("content-type", "text/plain; charset=utf-8");
        c.header("content-disposition", `attachment; filename="${name}"`);
        return stream(c, async (out) => {
          let slice = first;
          for (;;) {
            if (slice.bytes.length > 0) await out.write(slice.bytes);
            const next = slice.offset + slice.bytes.length;
            if (slice.bytes.length === 0 || next >= slice.size) break;
            slice = await at(next, MAX_LOG_SLICE);
          }
        });
      }
      if (query.follow) {
        await at(query.offset, 1); // unknown run, task or try: a 404 before streaming starts
        c.header("content-type", "text/plain; charset=utf-8");
        c.header("cache-control", "no-store");
        c.header("x-content-type-options", "nosniff");
        return stream(c, async (out) => {
          let offset = query.offset;
          let open = true;
          out.onAbort(() => void (open = false));
          const stopWatching = watchCredentials(c, credentialRecheckMs ?? CREDENTIAL_RECHECK_MS, () => void (open = false));
          out.onAbort(stopWatching);
          while (open) {
            const slice = await at(offset, MAX_LOG_SLICE);
            if (slice.bytes.length > 0) {
              await out.write(slice.bytes);
              offset += slice.bytes.length;
              continue;
            }
            if (slice.ended) break;
            await out.sleep(FOLLOW_POLL_MS);
          }
          stopWatching();
        });
      }
      const slice = await at(query.offset, query.length);
      const nextOffset = slice.offset + slice.bytes.length;
      return c.json({
        offset: slice.offset,
        size: slice.size,
        nextOffset,
        ended: slice.ended,
        complete: slice.ended && nextOffset >= slice.size,
        text: slice.bytes.toString("utf8"),
      });
    },
  });

  addRoute(api, registry, {
    method: "post", path: "/runs/:runId/clear", tag: "actions", action: true,
    summary: "Clear: run task instances again (all, or only the failed ones), keeping their history",
    params: runParams,
    body: z.object({ reason, failedOnly: z.boolean().optional().describe("only failed and upstream_failed task instances"), openFrozen: openFrozenReason, code: codeChoice }),
    responds: { status: 200, description: "{ tasks, audit }" },
    handle: async (c, { params, body, principal }) => {
      let audit: AuditEntry | undefined;
      const tasks = await engine.clear(params.runId, { ...body, actor: principal.actor, onAudit: (e) => (audit = e) });
      return c.json(toApi({ tasks, audit }));
    },
  });

  addRoute(api, registry, {
    method: "post", path: "/runs/:runId/tasks/:taskId/clear", tag: "actions", action: true,
    summary: "Clear one task instance (with downstream and/or upstream), keeping its history",
    params: taskParams,
    body: z.object({
      reason,
      downstream: z.boolean().optional().describe("and everything downstream of it"),
      upstream: z.boolean().optional().describe("and everything upstream of it"),
      failedOnly: z.boolean().optional(),
      openFrozen: openFrozenReason,
      code: codeChoice,
    }),
    responds: { status: 200, description: "{ tasks, audit }" },
    handle: async (c, { params, body, principal }) => {
      let audit: AuditEntry | undefined;
      const tasks = await engine.clear(params.runId, { ...body, taskId: params.taskId, actor: principal.actor, onAudit: (e) => (audit = e) });
      return c.json(toApi({ tasks, audit }));
    },
  });

  addRoute(api, registry, {
    method: "post", path: "/runs/:runId/tasks/:taskId/skip", tag: "actions", action: true,
    summary: "Skip a task instance on purpose; downstream follows its trigger rules",
    params: taskParams,
    body: z.object({ reason }),
    responds: { status: 200, description: "{ task, audit }" },
    handle: async (c, { params, body, principal }) => {
      let audit: AuditEntry | undefined;
      const task = await engine.skip(params.runId, params.taskId, { reason: body.reason, actor: principal.actor, onAudit: (e) => (audit = e) });
      return c.json(toApi({ task, audit }));
    },
  });

  addRoute(api, registry, {
    method: "post", path: "/runs/:runId/tasks/:taskId/mark", tag: "actions", action: true,
    summary: "Mark a task instance success or failed by hand; downstream follows. A mapped task's `task[glob]` marks every instance it matches in one transaction (task is then the mapped task, the audit lists the keys)",
    params: taskParams,
    body: z.object({ state: z.enum(["success", "failed"]).describe("the state to set"), reason }),
    responds: { status: 200, description: "{ task, audit }" },
    handle: async (c, { params, body, principal }) => {
      let audit: AuditEntry | undefined;
      const task = await engine.mark(params.runId, params.taskId, { ...body, actor: principal.actor, onAudit: (e) => (audit = e) });
      return c.json(toApi({ task, audit }));
    },
  });

  /** One task instance, read alone: a run may map 100,000 items. */
  async function requireTask(runId: string, taskId: string): Promise<TaskInstanceRecord> {
    return engine.taskInstance(runId, taskId);
  }
}
