import type { Hono } from "hono";
import { z } from "zod";
import { NotFoundError } from "../../core/model/errors.ts";
import { FieldError } from "../problem.ts";
import type { AppDeps, AppEnv } from "../env.ts";
import { toApi } from "./json.ts";
import { addRoute, type AnyRouteSpec } from "./route.ts";
import { pipelineParams, reason, runParams } from "./schemas.ts";

const codeVersion = z.string().min(1).max(64).describe("a code version, or a prefix that names one");

/** A pipeline's code versions (docs/versions.md): the timeline, one version, and the diff between two. */
export function versionRoutes(api: Hono<AppEnv>, registry: AnyRouteSpec[], { engine }: AppDeps): void {
  addRoute(api, registry, {
    method: "get", path: "/pipelines/:pipelineId/versions", tag: "pipelines",
    summary: "The pipeline's code versions, oldest first: when each was recorded and by whom, when it first ran, its runs (count and dates); the runs themselves: /pipelines/{pipelineId}/runs?code=",
    params: pipelineParams,
    responds: { status: 200, description: "{ latest, items: [code version] }" },
    handle: async (c, { params }) => c.json(toApi({ latest: engine.latestCodeVersion(params.pipelineId), items: await engine.codeVersions(params.pipelineId) })),
  });

  addRoute(api, registry, {
    method: "get", path: "/pipelines/:pipelineId/versions/diff", tag: "pipelines",
    summary: "The graph (tasks added, removed, changed: kind, upstream, settings) and source (unified diff per file) differences between two code versions",
    params: pipelineParams,
    query: z.object({ from: codeVersion, to: codeVersion }),
    responds: { status: 200, description: "{ pipelineId, from, to, graph: { added, removed, changed }, sources: [{ file, diff }] }" },
    handle: async (c, { params, query }) => {
      // Each side is checked apart, so a problem names the one that is unknown.
      for (const field of ["from", "to"] as const) await named(field, () => engine.codeVersion(params.pipelineId, query[field]));
      return c.json(toApi(await engine.codeDiff(params.pipelineId, query.from, query.to)));
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/pipelines/:pipelineId/versions/:version", tag: "pipelines",
    summary: "One code version: file, packages, graph version, where its bundle is, when recorded and by whom, its runs (count and dates)",
    params: pipelineParams.extend({ version: codeVersion }),
    responds: { status: 200, description: "the code version" },
    handle: async (c, { params }) => c.json(toApi(await engine.codeVersion(params.pipelineId, params.version))),
  });

  addRoute(api, registry, {
    method: "get", path: "/runs/:runId/code", tag: "runs",
    summary: "The run's code version, the pipeline's latest, and what keeps the run from moving to it (the tasks it still has to run that the latest removed or runs as another kind)",
    params: runParams,
    responds: { status: 200, description: "{ codeVersion, latest, cannotMove: [reason] }" },
    handle: async (c, { params }) => c.json(toApi(await engine.codeStanding(params.runId))),
  });

  addRoute(api, registry, {
    method: "post", path: "/runs/:runId/code/keep", tag: "actions", action: true,
    summary: "Let a live run whose code is not the latest finish on its own code, audited (the other choice: clear it with code latest)",
    params: runParams,
    body: z.object({ reason }),
    responds: { status: 200, description: "{ audit }" },
    handle: async (c, { params, body, principal }) => c.json(toApi({ audit: await engine.keepRunCode(params.runId, { reason: body.reason, actor: principal.actor }) })),
  });
}

/** Reads a code version named by `field`: one it does not know is a 404 problem naming that field. */
export async function named<T>(field: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    throw error instanceof NotFoundError && error.what === "codeVersion" ? new FieldError(field, error.message, 404) : error;
  }
}
