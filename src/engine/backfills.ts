import { randomBytes } from "node:crypto";
import { ArgumentError, NotFoundError, UsageError } from "../core/model/errors.ts";
import { reachable } from "../core/graph/dag.ts";
import type { Pipeline } from "../core/pipeline/types.ts";
import { describeFrozen, frozenPeriodOf, type FrozenPeriod } from "../core/policy/frozen.ts";
import type { Clock } from "../core/model/clock.ts";
import { addDays, parseBusinessDate, startOfDay } from "../core/time/dates.ts";
import type { AuditEntry, BackfillItem, BackfillProgress, BackfillRecord, NewBackfillItem, RunRecord, Store } from "../store/port.ts";
import { defaultActor, tellAudit, type Acting } from "./acting.ts";
import { estimateBackfill, type BackfillEstimate } from "./backfill/estimate.ts";
import { estimateMappedWork, MAPPED_WORK_HISTORY_RUNS, type MappedWorkEstimate } from "../core/policy/mapped-work.ts";
import { IN_THE_FUTURE, planBackfill, rangesOf, type Reprocess } from "./backfill/plan.ts";
import { refusalsTranslated } from "./records/store-refusals.ts";
import { parseCodeChoice, type CodeChoice } from "./records/code-choice.ts";
import { codeOf } from "./project/code-of.ts";
import type { EngineEvents } from "./events/engine-events.ts";

export interface BackfillRequest {
  from: string;
  to: string;
  reprocess?: Reprocess;
  backwards?: boolean;
  maxActiveRuns?: number;
  /** A regular expression over task ids: only those tasks run. */
  tasks?: string;
  /** With `tasks`: everything downstream of the matched tasks runs too. */
  downstream?: boolean;
  /** Rewrite frozen dates anyway; the reason is recorded. */
  openFrozen?: string;
  /** The code the runs it runs again run: `latest` (the default) or `same`, their own. New runs take the latest. */
  code?: string;
}

export interface BackfillPlan {
  pipelineId: string;
  from: string;
  to: string;
  reprocess: Reprocess;
  backwards: boolean;
  maxActiveRuns: number;
  taskIds: string[] | null;
  /** Which code the runs it runs again run; new runs run the latest. */
  code: CodeChoice;
  /** Each date with the code version it will run (null: the pipeline has no bundle, or the run none). */
  items: (NewBackfillItem & { codeVersion: string | null })[];
  estimate: BackfillEstimate;
  /** Each mapped task's expected instances per date and in all, from its item counts in history: an estimate. */
  mapped: MappedWorkEstimate;
}

/** What backfills need of the engine: its store and clock, its pipelines, and its way of recording and announcing an action. */
export interface BackfillsEnvironment {
  store: Store;
  clock: Clock;
  pipeline(id: string): Pipeline;
  /** The pipeline's frozen periods and the project's. */
  frozenPeriods(pipelineId: string): FrozenPeriod[];
  /** Records the pipeline's graph version and any change of frozen periods (before a run or backfill names it). */
  recordVersion(pipeline: Pipeline, actor: string, at: number): Promise<void>;
  audit(actor: string, action: string, pipeline: Pipeline, runId: string | null, taskId: string | null, reason: string | null, details: Record<string, unknown>): Promise<AuditEntry>;
  /** Wakes this state directory's workers and scheduler. */
  announce(): void;
  /** Told of the runs a cancel ended (their run spans are written from it). */
  events: EngineEvents;
}

/** Backfills: planned before they act (per date, with reasons, frozen dates refused, a cost estimate), stored, paused, resumed, cancelled. */
export class Backfills {
  readonly #e: BackfillsEnvironment;

  constructor(environment: BackfillsEnvironment) {
    this.#e = environment;
  }

  async plan(pipelineId: string, request: BackfillRequest): Promise<BackfillPlan> {
    const pipeline = this.#e.pipeline(pipelineId);
    let from: string;
    let to: string;
    try {
      from = parseBusinessDate(request.from);
      to = parseBusinessDate(request.to);
    } catch (error) {
      throw new UsageError((error as Error).message, { pipeline: pipelineId });
    }
    if (to < from) throw new ArgumentError("to", (n) => `${n("to")} ${to} is before ${n("from")} ${from}`, { pipeline: pipelineId });
    const maxActiveRuns = request.maxActiveRuns ?? 4;
    if (!Number.isInteger(maxActiveRuns) || maxActiveRuns < 1) {
      throw new ArgumentError("maxActiveRuns", (n) => `${n("maxActiveRuns")} ${maxActiveRuns}: expected a whole number >= 1`);
    }
    const taskIds = this.#selectTasks(pipeline, request.tasks, request.downstream ?? false);
    const tz = pipeline.schedule.timezone;
    const { runs } = await this.#e.store.ledger(pipeline.id, startOfDay(from, tz) - 1, startOfDay(addDays(to, 1), tz));
    const now = this.#e.clock.now();
    const code = parseCodeChoice(request.code, "latest");
    const latest = codeOf(pipeline)?.codeVersion ?? null;
    const pinned = new Map(runs.map((r) => [r.runId, r.codeVersion]));
    const items = planBackfill({
      pipeline, from, to, reprocess: request.reprocess ?? "none", backwards: request.backwards ?? false, now, runs,
      frozen: this.#e.frozenPeriods(pipeline.id), openFrozen: request.openFrozen,
    }).map((item) => ({
      ...item,
      codeVersion: item.action === "rerun" && code === "same" ? pinned.get(item.runId) ?? null : item.action === "create" || item.action === "rerun" ? latest : pinned.get(item.runId) ?? null,
    }));
    const toRun = items.filter((i) => i.action === "create" || i.action === "rerun").length;
    const pools = new Map((await this.#e.store.listPools()).map((p) => [p.name, p.slots]));
    const estimate = estimateBackfill(pipeline, toRun, maxActiveRuns, await this.#e.store.taskDurations(pipeline.id, 100), pools);
    const mappedTasks = [...pipeline.tasks.values()].filter((t) => t.kind === "function" && t.map && (!taskIds || taskIds.includes(t.id))).map((t) => t.id);
    const mapped = estimateMappedWork(
      mappedTasks, mappedTasks.length ? await this.#e.store.mappedItemCounts(pipeline.id, mappedTasks, MAPPED_WORK_HISTORY_RUNS) : new Map(), toRun,
    );
    return { pipelineId, from, to, reprocess: request.reprocess ?? "none", backwards: request.backwards ?? false, maxActiveRuns, taskIds, code, items, estimate, mapped };
  }

  /** Plans and stores a backfill; the scheduler runs it. The same live backfill asked again is returned, not duplicated. */
  async create(pipelineId: string, request: BackfillRequest & { reason: string } & Acting): Promise<{ backfill: BackfillRecord; created: boolean; plan: BackfillPlan }> {
    if (!request.reason?.trim()) throw new ArgumentError("reason", (n) => `a backfill needs ${n("reason")}`);
    const plan = await this.plan(pipelineId, request);
    const pipeline = this.#e.pipeline(pipelineId);
    const actor = request.actor ?? defaultActor();
    const at = this.#e.clock.now();
    await this.#e.recordVersion(pipeline, actor, at);
    const { backfill, created } = await this.#e.store.createBackfill({
      backfillId: `bf_${randomBytes(4).toString("hex")}`,
      pipelineId, fromDate: plan.from, toDate: plan.to, reprocess: plan.reprocess, maxActiveRuns: plan.maxActiveRuns,
      backwards: plan.backwards, taskIds: plan.taskIds, actor, reason: request.reason, graphVersion: pipeline.version,
      estimate: { ...plan.estimate }, items: plan.items, at, codeChoice: plan.code,
    });
    if (created) {
      const frozen = this.#e.frozenPeriods(pipeline.id);
      const runs = (i: NewBackfillItem) => i.action === "create" || i.action === "rerun";
      tellAudit(request, await this.#e.audit(actor, "backfill", pipeline, null, null, request.reason, {
        backfillId: backfill.backfillId, from: plan.from, to: plan.to, reprocess: plan.reprocess, openFrozen: request.openFrozen ?? null,
        // The choice and the versions the dates will run, as the preview showed them.
        code: { choice: plan.code, versions: codeRanges(plan.items, runs) },
        planned: plan.items.filter(runs).length,
        left: plan.items.filter((i) => i.action === "leave").length,
        // Dates not ended yet differ only by their end: one range says it.
        refused: rangesOf(plan.items, (i) => (i.action !== "refuse" ? null : i.why.startsWith(IN_THE_FUTURE) ? `${IN_THE_FUTURE}: not ended yet` : i.why)),
        // Frozen dates this backfill rewrites, opened with `openFrozen`: the ones an auditor asks about first.
        frozenOpened: rangesOf(plan.items, (i) => {
          const period = runs(i) ? frozenPeriodOf(frozen, i.businessDate) : null;
          return period ? describeFrozen(period) : null;
        }),
      }));
      this.#e.announce();
    }
    return { backfill, created, plan };
  }

  async list(query: { pipelineId?: string; limit?: number } = {}): Promise<(BackfillRecord & { progress: BackfillProgress })[]> {
    const list = await this.#e.store.listBackfills(query);
    return Promise.all(list.map(async (b) => ({ ...b, progress: await this.#e.store.backfillProgress(b.backfillId) })));
  }

  async status(backfillId: string): Promise<BackfillRecord & { progress: BackfillProgress }> {
    const backfill = await this.#e.store.getBackfill(backfillId);
    if (!backfill) throw new NotFoundError("backfill", `unknown backfill "${backfillId}"`);
    return { ...backfill, progress: await this.#e.store.backfillProgress(backfillId) };
  }

  /** A backfill's plan, one item per business date, in execution order. */
  async items(backfillId: string): Promise<BackfillItem[]> {
    await this.status(backfillId);
    return this.#e.store.backfillItems(backfillId);
  }

  async control(backfillId: string, action: "pause" | "resume" | "cancel", request: Acting = {}): Promise<BackfillRecord> {
    const current = await this.status(backfillId);
    const live = current.state === "running" || current.state === "paused";
    if (!live) throw new UsageError(`backfill ${backfillId} is ${current.state}; only a running or paused backfill can be ${action}d`);
    const at = this.#e.clock.now();
    const actor = request.actor ?? defaultActor();
    const liveBefore = action === "cancel" ? await this.#liveRuns(backfillId) : [];
    const updated = await refusalsTranslated(() =>
      action === "cancel"
        ? this.#e.store.cancelBackfill(backfillId, `backfill ${backfillId} cancelled by ${actor}${request.reason ? `: ${request.reason}` : ""}`, at)
        : this.#e.store.setBackfillState(backfillId, action === "pause" ? "paused" : "running", at),
    );
    tellAudit(request, await this.#e.audit(actor, `backfill-${action}`, this.#e.pipeline(current.pipelineId), null, null, request.reason ?? null, { backfillId }));
    // A cancel ends at once the runs with nothing running: no attempt will say so.
    for (const before of liveBefore) {
      const after = await this.#e.store.getRun(before.runId);
      if (after && (after.state === "success" || after.state === "failed")) {
        this.#e.events.emit("run:ended", { pipelineId: after.pipelineId, runId: after.runId, state: after.state, by: "operator" });
      }
    }
    this.#e.announce();
    return updated;
  }

  /** The backfill's runs that are queued or running now. */
  async #liveRuns(backfillId: string): Promise<RunRecord[]> {
    const started = (await this.#e.store.backfillItems(backfillId)).filter((item) => item.started);
    const runs = await Promise.all(started.map((item) => this.#e.store.getRun(item.runId)));
    return runs.filter((run): run is RunRecord => run !== null && (run.state === "queued" || run.state === "running"));
  }

  /** Task ids matching the pattern (a regular expression), plus everything downstream of them. */
  #selectTasks(pipeline: Pipeline, pattern: string | undefined, downstream: boolean): string[] | null {
    if (pattern === undefined) return null;
    let regex: RegExp;
    try {
      regex = new RegExp(pattern);
    } catch (error) {
      throw new ArgumentError("tasks", (n) => `${n("tasks")} ${JSON.stringify(pattern)}: not a regular expression: ${(error as Error).message}`);
    }
    const nodes = [...pipeline.tasks.values()];
    const matched = nodes.filter((t) => regex.test(t.id)).map((t) => t.id);
    if (matched.length === 0) {
      throw new ArgumentError("tasks", (n) => `${n("tasks")} ${JSON.stringify(pattern)} matches no task of ${pipeline.id} (tasks: ${nodes.map((t) => t.id).join(", ")})`);
    }
    const all = new Set(matched);
    if (downstream) for (const id of matched) for (const d of reachable(nodes, id, "downstream")) all.add(d);
    return [...pipeline.tasks.keys()].filter((id) => all.has(id));
  }
}

/** The dates the backfill runs, as ranges by the code version each runs (null: not pinned, no bundle). */
function codeRanges(items: BackfillPlan["items"], runs: (item: BackfillPlan["items"][number]) => boolean): { from: string; to: string; version: string | null }[] {
  const UNPINNED = "\0";
  return rangesOf(items, (i) => (runs(i) ? i.codeVersion ?? UNPINNED : null))
    .map(({ from, to, why }) => ({ from, to, version: why === UNPINNED ? null : why }));
}
