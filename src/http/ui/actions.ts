import { Hono, type Context } from "hono";
import { ArgumentError, UsageError } from "../../core/model/errors.ts";
import type { Acting, Engine } from "../../engine/engine.ts";
import type { AuditEntry } from "../../store/port.ts";
import type { Reprocess } from "../../engine/backfill/plan.ts";
import type { AppEnv, Principal } from "../env.ts";
import { principalOf } from "../env.ts";
import { links } from "./parts.ts";
import { setFlash } from "./flash.ts";
import { SNOOZES } from "./incidents.ts";
import { parseDuration } from "../../core/time/duration.ts";

type Form = Record<string, string>;

/**
 * The UI's form posts. Each one needs an operator and a reason, calls one engine action with the
 * principal as the actor (the engine writes the audit entry), and redirects back to the page the
 * form was on with what happened. A refusal goes back too, saying why; nothing is half done.
 */
export function uiActions(engine: Engine): Hono<AppEnv> {
  const actions = new Hono<AppEnv>();
  const act = (handler: (form: Form, acting: Acting, c: Context<AppEnv>) => Promise<{ done: string; to?: string }>) => async (c: Context<AppEnv>) => {
    const form = await formOf(c);
    const back = localPath(form.back);
    const principal = principalOf(c);
    if (!principal || !principal.mayAct) return refuse(c, back, principal);
    const written: AuditEntry[] = [];
    try {
      const { done, to } = await handler(form, { actor: principal.actor, onAudit: (entry) => written.push(entry) }, c);
      const audit = written.length ? ` Audit entry #${written.map((e) => e.id).join(", #")} by ${principal.actor}.` : "";
      setFlash(c, { kind: "good", text: done + audit });
      return c.redirect(to ?? back, 303);
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      setFlash(c, { kind: "bad", text: `Refused: ${error instanceof ArgumentError ? error.describe(fieldLabel) : error.message}` });
      return c.redirect(back, 303);
    }
  };

  actions.post("/runs/:runId/clear", act(async (form, acting, c) => {
    const runId = c.req.param("runId")!;
    const tasks = await engine.clear(runId, {
      taskId: form.taskId || undefined,
      downstream: form.downstream === "1",
      failedOnly: form.failedOnly === "1",
      reason: reasonOf(form),
      openFrozen: form.openFrozen?.trim() || undefined,
      code: form.code || undefined,
      ...acting,
    });
    const cleared = tasks.filter((t) => t.state === "scheduled" || t.state === "queued").map((t) => t.taskId);
    return { done: `Cleared ${cleared.join(", ") || "the run"} of ${runId}.` };
  }));
  actions.post("/runs/:runId/code/keep", act(async (form, acting, c) => {
    const runId = c.req.param("runId")!;
    await engine.keepRunCode(runId, { reason: reasonOf(form), ...acting });
    return { done: `${runId} finishes on its own code.` };
  }));
  actions.post("/runs/:runId/tasks/:taskId/skip", act(async (form, acting, c) => {
    const ti = await engine.skip(c.req.param("runId")!, c.req.param("taskId")!, { reason: reasonOf(form), ...acting });
    return { done: `Skipped ${ti.taskId}.` };
  }));
  actions.post("/runs/:runId/tasks/:taskId/mark", act(async (form, acting, c) => {
    if (form.state !== "success" && form.state !== "failed") throw new UsageError(`state ${JSON.stringify(form.state ?? "")}: expected success or failed`);
    const ti = await engine.mark(c.req.param("runId")!, c.req.param("taskId")!, { state: form.state, reason: reasonOf(form), ...acting });
    const named = c.req.param("taskId")!;
    return { done: named === ti.taskId ? `Marked ${ti.taskId} ${ti.state}.` : `Marked ${named} ${form.state}; ${ti.taskId} is ${ti.state}.` };
  }));
  actions.post("/pipelines/:pipelineId/pause", act(async (form, acting, c) => {
    const state = await engine.pause(c.req.param("pipelineId")!, { note: reasonOf(form), ...acting });
    return { done: `Paused ${state.pipelineId}: the scheduler creates no run until it is unpaused.` };
  }));
  actions.post("/pipelines/:pipelineId/unpause", act(async (form, acting, c) => {
    const state = await engine.unpause(c.req.param("pipelineId")!, { note: reasonOf(form), ...acting });
    return { done: `Unpaused ${state.pipelineId}.` };
  }));
  actions.post("/pipelines/:pipelineId/trigger", act(async (form, acting, c) => {
    if (!form.date) throw new UsageError("give the business date to run (date)");
    const run = await engine.trigger(c.req.param("pipelineId")!, form.date, { reason: reasonOf(form), ...acting, openFrozen: form.openFrozen || undefined });
    return { done: `Triggered ${run.runId}; a worker runs it.`, to: links.run(run.runId) };
  }));
  actions.post("/backfills", act(async (form, acting) => {
    const { backfill, created } = await engine.backfill(form.pipeline ?? "", {
      ...backfillRequestOf(form),
      reason: reasonOf(form),
      ...acting,
    });
    return { done: created ? `Backfill ${backfill.backfillId} created; the scheduler runs it.` : `The same backfill is already live: ${backfill.backfillId}.`, to: links.backfill(backfill.backfillId) };
  }));
  for (const verb of ["pause", "resume", "cancel"] as const) {
    actions.post(`/backfills/:backfillId/${verb}`, act(async (form, acting, c) => {
      const b = await engine.controlBackfill(c.req.param("backfillId")!, verb, { reason: reasonOf(form), ...acting });
      return { done: `Backfill ${b.backfillId} is ${b.state}.` };
    }));
  }
  actions.post("/incidents/:key", act(async (form, acting, c) => {
    const key = c.req.param("key")!;
    const reason = reasonOf(form);
    const snooze = SNOOZES.find(([value]) => value === form.snooze);
    if (form.snooze !== undefined && !snooze) throw new UsageError(`snooze ${JSON.stringify(form.snooze)}: expected ${SNOOZES.map(([v]) => v).join(", ")}`);
    if (snooze) {
      await engine.acknowledgeIncident(key, { reason, for: parseDuration(snooze[0]), ...acting });
      return { done: `Snoozed ${key} for ${snooze[1]}: it is open again then, unless resolved.` };
    }
    if (form.do === "acknowledge") {
      await engine.acknowledgeIncident(key, { reason, ...acting });
      return { done: `Acknowledged ${key}.` };
    }
    if (form.do === "resolve") {
      await engine.resolveIncident(key, { reason, ...acting });
      return { done: `Resolved ${key}; its notifiers are told.` };
    }
    throw new UsageError(`do ${JSON.stringify(form.do ?? "")}: expected acknowledge or resolve`);
  }));
  actions.post("/pools/:name", act(async (form, acting, c) => {
    const slots = Number(form.slots);
    await engine.setPool(c.req.param("name")!, slots, { description: form.description || undefined, reason: reasonOf(form), ...acting });
    return { done: `Pool ${c.req.param("name")} has ${slots} slot(s) now.` };
  }));
  return actions;
}

/** The fields of the backfill form (also the preview's query string). */
export function backfillRequestOf(form: Record<string, string | undefined>) {
  const reprocess = (form.reprocess || "none") as Reprocess;
  if (!["none", "failed", "all"].includes(reprocess)) throw new UsageError(`reprocess ${JSON.stringify(form.reprocess)}: expected none, failed or all`);
  const maxActiveRuns = form.maxActiveRuns ? Number(form.maxActiveRuns) : undefined;
  return {
    from: form.from ?? "",
    to: form.to ?? "",
    reprocess,
    backwards: form.backwards === "1",
    maxActiveRuns,
    tasks: form.tasks || undefined,
    downstream: form.downstream === "1",
    openFrozen: form.openFrozen || undefined,
  };
}

/** The engine's argument as the form names it: what the person sees next to the field. */
const FIELD_LABELS: Record<string, string> = { openFrozen: "a reason for opening the frozen period", code: "Code:" };

function fieldLabel(argument: string): string {
  return FIELD_LABELS[argument] ?? argument;
}

function reasonOf(form: Form): string {
  const reason = (form.reason ?? "").trim();
  if (!reason) throw new UsageError("a reason is required: it is written to the audit log with your name");
  return reason;
}

async function formOf(c: Context<AppEnv>): Promise<Form> {
  const body = await c.req.parseBody();
  const form: Form = {};
  for (const [key, value] of Object.entries(body)) if (typeof value === "string") form[key] = value;
  return form;
}

function refuse(c: Context<AppEnv>, back: string, principal: Principal | null): Response {
  const text = principal ? `${principal.actor} is a viewer: actions need an operator token` : "sign in to act";
  return c.html(`<!doctype html><meta charset="utf-8"><title>Refused · idem</title><p>Refused: ${text.replace(/[&<>"']/g, "")}. <a href="${back.replace(/"/g, "%22")}">Back</a></p>`, 403);
}

function localPath(path: string | undefined): string {
  return path && path.startsWith("/ui") && !path.startsWith("//") ? path : "/ui";
}
