import { Hono, type Context } from "hono";
import { compress } from "hono/compress";
import { ConflictError, DefinitionError, NotFoundError, UsageError } from "../../core/model/errors.ts";
import type { AppDeps, AppEnv } from "../env.ts";
import { csrfTokenOf, principalOf } from "../env.ts";
import { ASSETS } from "./assets.ts";
import { html, type Html } from "./html.ts";
import { page, pageHead, type View } from "./parts.ts";
import { uiActions } from "./actions.ts";
import { takeFlash } from "./flash.ts";
import { pipelinesPage } from "./pages/pipelines.ts";
import { gridPage, gridRowsOfDate } from "./pages/grid.ts";
import { graphPage } from "./pages/graph.ts";
import { runPage } from "./pages/run.ts";
import { taskPage, taskLogChunk } from "./pages/task.ts";
import { instancesPage } from "./pages/instances.ts";
import { ledgerPage, oncallPage } from "./pages/ledger.ts";
import { backfillPage, backfillsPage, newBackfillPage } from "./pages/backfills.ts";
import { freshnessPage } from "./pages/freshness.ts";
import { datasetsPage, healthPage, poolsPage, workersPage } from "./pages/operations.ts";
import { auditPage } from "./pages/audit.ts";
import { loginPage } from "./pages/login.ts";
import { versionDiffPage, versionPage, versionsPage } from "./pages/versions.ts";

/**
 * The web UI: server-rendered pages under /ui that only read from and act through the engine.
 * Every view's state is in its URL; the one stylesheet and script are served from /ui/assets.
 */
export function uiRoutes(deps: AppDeps): Hono<AppEnv> {
  const { engine } = deps;
  const ui = new Hono<AppEnv>();
  const zones = [...new Set(engine.pipelines().map((p) => p.schedule.timezone))];
  const viewOf = (c: Context<AppEnv>): View => {
    return { principal: principalOf(c), csrf: csrfTokenOf(c), url: new URL(c.req.url), zones, flash: takeFlash(c) };
  };
  const render = (build: (view: View, c: Context<AppEnv>) => Promise<Html> | Html) => async (c: Context<AppEnv>) => {
    const view = viewOf(c);
    if (!view.principal) return c.redirect(`/ui/login?next=${encodeURIComponent(view.url.pathname + view.url.search)}`, 303);
    return c.html((await build(view, c)).value);
  };

  ui.get("/", (c) => c.redirect("/ui", 302));
  for (const asset of Object.values(ASSETS)) {
    ui.get(asset.path, (c) => {
      const gzip = /\bgzip\b/.test(c.req.header("accept-encoding") ?? "");
      c.header("content-type", asset.type);
      c.header("cache-control", "public, max-age=31536000, immutable");
      c.header("vary", "accept-encoding");
      if (gzip) c.header("content-encoding", "gzip");
      return c.body(new Uint8Array(gzip ? asset.gzipped : asset.body));
    });
  }
  ui.use("/ui/*", compress());
  ui.use("/ui", compress());
  ui.get("/ui/login", (c) => c.html(loginPage(viewOf(c)).value));

  ui.get("/ui", render((view) => oncallPage(engine, view)));
  ui.get("/ui/pipelines", render((view) => pipelinesPage(engine, view)));
  ui.get("/ui/pipelines/:pipelineId", (c) => c.redirect(`/ui/pipelines/${encodeURIComponent(c.req.param("pipelineId"))}/grid`, 302));
  ui.get("/ui/pipelines/:pipelineId/grid", render((view, c) => gridPage(engine, view, c.req.param("pipelineId")!)));
  ui.get("/ui/pipelines/:pipelineId/grid/rows", async (c) => {
    if (!principalOf(c)) return c.text("sign in first", 401);
    return c.html(await gridRowsOfDate(engine, c.req.param("pipelineId"), c.req.query("date") ?? ""));
  });
  ui.get("/ui/pipelines/:pipelineId/graph", render((view, c) => graphPage(engine, view, c.req.param("pipelineId")!)));
  ui.get("/ui/pipelines/:pipelineId/ledger", render((view, c) => ledgerPage(engine, view, c.req.param("pipelineId")!)));
  ui.get("/ui/pipelines/:pipelineId/versions", render((view, c) => versionsPage(engine, view, c.req.param("pipelineId")!)));
  ui.get("/ui/pipelines/:pipelineId/versions/diff", render((view, c) => versionDiffPage(engine, view, c.req.param("pipelineId")!)));
  ui.get("/ui/pipelines/:pipelineId/versions/:version", render((view, c) => versionPage(engine, view, c.req.param("pipelineId")!, c.req.param("version")!)));
  ui.get("/ui/runs/:runId", render((view, c) => runPage(engine, view, c.req.param("runId")!)));
  ui.get("/ui/runs/:runId/tasks/:taskId", render((view, c) => taskPage(engine, view, c.req.param("runId")!, c.req.param("taskId")!)));
  ui.get("/ui/runs/:runId/tasks/:taskId/instances", render((view, c) => instancesPage(engine, view, c.req.param("runId")!, c.req.param("taskId")!)));
  ui.get("/ui/runs/:runId/tasks/:taskId/log", async (c) => {
    if (!principalOf(c)) return c.text("sign in first", 401);
    const chunk = await taskLogChunk(engine, c.req.param("runId"), c.req.param("taskId"), new URL(c.req.url).searchParams);
    c.header("x-next-offset", String(chunk.nextOffset));
    c.header("x-attempt-running", String(chunk.running));
    c.header("content-type", "text/plain; charset=utf-8");
    if (chunk.download) c.header("content-disposition", `attachment; filename="${chunk.filename}"`);
    return c.body(chunk.text);
  });
  ui.get("/ui/backfills", render((view) => backfillsPage(engine, view)));
  ui.get("/ui/backfills/new", render((view) => newBackfillPage(engine, view)));
  ui.get("/ui/backfills/:backfillId", render((view, c) => backfillPage(engine, view, c.req.param("backfillId")!)));
  ui.get("/ui/freshness", render((view) => freshnessPage(engine, view)));
  ui.get("/ui/datasets", render((view) => datasetsPage(engine, view)));
  ui.get("/ui/pools", render((view) => poolsPage(engine, view)));
  ui.get("/ui/workers", render((view) => workersPage(engine, view)));
  ui.get("/ui/health", render((view) => healthPage(engine, view)));
  ui.get("/ui/audit", render((view) => auditPage(engine, view)));
  ui.route("/ui", uiActions(engine));

  ui.onError((error, c) => {
    const status = error instanceof NotFoundError ? 404 : error instanceof ConflictError ? 409 : error instanceof UsageError || error instanceof DefinitionError ? 422 : 500;
    if (status === 500) process.stderr.write(`${c.req.method} ${c.req.path}: ${error.stack ?? error.message}\n`);
    const view = viewOf(c);
    const message = status === 500 ? "Something went wrong on the server; its log has the details." : error.message;
    return c.html(
      page(view, {
        title: status === 404 ? "Not found" : "Refused",
        active: "",
        body: html`${pageHead({ title: status === 404 ? "Not found" : status === 500 ? "Server error" : "Refused", sub: `HTTP ${status}` })}<div class="note bad" role="alert">${message}</div><p><a href="/ui">Back to On call</a></p>`,
      }).value,
      status,
    );
  });
  return ui;
}
