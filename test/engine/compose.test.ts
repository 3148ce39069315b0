import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { eventLines } from "../../src/engine/events/event-lines.ts";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { NotFoundError } from "../../src/core/model/errors.ts";
import { openProject } from "../../src/engine/compose.ts";
import type { Engine } from "../../src/engine/engine.ts";
import { loadConfig } from "../../src/engine/project/config.ts";
import { signWebhook } from "../../src/engine/signing/webhook-signature.ts";
import { dropSchema, freshSchema } from "../process/postgres-support.ts";

const repo = resolve(import.meta.dirname, "../..");
const onPostgres = process.env.IDEM_TEST_ENGINE_STORE === "postgres";
let project: string;
let engine: Engine | undefined;
let schema: string | null = null;

afterEach(async () => {
  await engine?.close();
  engine = undefined;
  if (schema) await dropSchema(process.env.IDEM_TEST_PG_URL!, schema);
  schema = null;
  rmSync(project, { recursive: true, force: true });
});

/** A project on disk (under the repository, so its files resolve "idem"); on PostgreSQL its state in a fresh schema. */
function writeProject(config: string, pipelines: Record<string, string>): void {
  mkdirSync(join(repo, ".tmp"), { recursive: true });
  project = mkdtempSync(join(repo, ".tmp", "compose-"));
  mkdirSync(join(project, "pipelines"));
  if (onPostgres) schema = freshSchema();
  const state = schema ? `state: ${JSON.stringify(`${process.env.IDEM_TEST_PG_URL}?schema=${schema}`)}, ` : "";
  writeFileSync(join(project, "idem.config.ts"), `import { defineConfig } from "idem";\nexport default defineConfig({ ${state}${config} });\n`);
  for (const [name, text] of Object.entries(pipelines)) writeFileSync(join(project, "pipelines", name), text);
}

const DAYS = `import { pipeline, daily } from "idem";
export const days = pipeline("days", { schedule: daily({ at: "00:00" }), start: "2026-01-01", catchup: "latest" }, {
  one: { run: () => ({ rows: 1 }) },
});
`;

async function until<T>(what: string, look: () => Promise<T | undefined> | T | undefined, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const seen = await look();
    if (seen !== undefined) return seen;
    if (Date.now() > deadline) throw new Error(`gave up after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the engine as the composition root (openProject)", () => {
  it("builds the store, the pipelines and the engine's numbers from the config, and owns the store", async () => {
    writeProject(`concurrency: 3, prefetch: 6, parallelism: 5, pools: { warehouse: 2 }, workerLeaseMs: 4000, schedulerLeaseMs: 6000, reloadMs: 150, collectBundles: { everyMs: 3600000, keepNewest: 2 }`, { "days.ts": DAYS });
    const config = await loadConfig(project);
    engine = await openProject(config, { pipelines: true });
    expect(engine.settings).toEqual({ concurrency: 3, prefetch: 6, parallelism: 5, workerLeaseMs: 4000, schedulerLeaseMs: 6000, reloadMs: 150, logMaxBytes: config.logMaxBytes, pools: { warehouse: 2 },
      bundleCollection: { everyMs: 3_600_000, retention: { keepNewest: 2, keepDays: 30 } },
    });
    expect(engine.pipelines().map((p) => p.id)).toEqual(["days"]);
    expect((await engine.pools()).map((p) => [p.name, p.slots])).toEqual([["warehouse", 2]]);
    const store = engine.store;
    await engine.close();
    engine = undefined;
    await expect(store.listPools()).rejects.toThrow();

    engine = await openProject(config, { pipelines: false });
    expect(() => engine!.pipeline("days")).toThrow(NotFoundError);
  });

  it("gives the engine the signed dataset webhook of the config: its secret read from the variable it names, masked, and its tolerance", async () => {
    writeProject(`datasetWebhook: { secretEnv: "IDEM_TEST_COMPOSE_HOOK_SECRET", toleranceSeconds: 60 }`, { "days.ts": DAYS });
    process.env.IDEM_TEST_COMPOSE_HOOK_SECRET = "whsec_compose_91b2";
    const config = await loadConfig(project);
    expect(config.datasetWebhook).toEqual({ secretEnv: "IDEM_TEST_COMPOSE_HOOK_SECRET", toleranceMs: 60_000 });
    engine = await openProject(config, { pipelines: false });
    expect(engine.masker.mask("sent whsec_compose_91b2")).toBe("sent ***");
    const body = '{"businessDate":"2026-01-01","idempotencyKey":"k"}';
    const seconds = Math.floor(engine.clock.now() / 1000);
    expect(engine.datasetWebhookRefusal({ signature: signWebhook("whsec_compose_91b2", seconds, body), body })).toBeNull();
    expect(engine.datasetWebhookRefusal({ signature: signWebhook("whsec_compose_91b2", seconds - 90, body), body })?.message).toMatch(/^stale signature: .*\(at most 60 s\)$/);
    delete process.env.IDEM_TEST_COMPOSE_HOOK_SECRET;
  });

  it("runs a backfill in this process when no scheduler is live, handing back at once; leaves it to a live scheduler", async () => {
    writeProject(``, { "days.ts": DAYS });
    engine = await openProject(await loadConfig(project), { pipelines: true });
    const { backfill } = await engine.backfill("days", { from: "2026-01-01", to: "2026-01-03", reason: "first fill" });
    const stop = new AbortController();
    const here = await engine.runBackfillHere(backfill.backfillId, 2, stop.signal);
    expect(here).not.toBeNull();
    try {
      await until("the backfill to complete", async () => ((await engine!.backfillStatus(backfill.backfillId)).state === "completed" ? true : undefined));
    } finally {
      stop.abort();
      await here!.done;
    }
    expect((await engine.runs("days", 10)).map((r) => `${r.businessDate} ${r.trigger} ${r.state}`).sort()).toEqual([
      "2026-01-01 backfill success", "2026-01-02 backfill success", "2026-01-03 backfill success",
    ]);

    const scheduling = new AbortController();
    const scheduler = engine.runScheduler(scheduling.signal);
    try {
      await until("the scheduler to lead", async () => ((await engine!.leadership())?.current ? true : undefined));
      const again = await engine.backfill("days", { from: "2026-01-04", to: "2026-01-04", reason: "one more" });
      expect(await engine.runBackfillHere(again.backfill.backfillId, 2, new AbortController().signal)).toBeNull();
    } finally {
      scheduling.abort();
      await scheduler;
    }
  });

  it("the scheduler and the worker it builds run the project: a due interval becomes a run, and the run succeeds", async () => {
    writeProject(`reloadMs: 100`, { "days.ts": DAYS });
    engine = await openProject(await loadConfig(project), { pipelines: true });
    const stop = new AbortController();
    const lines = eventLines(engine.events);
    const running = engine.runLongLived("dev", stop.signal, () => Promise.all([engine!.runScheduler(stop.signal), engine!.runWorker(stop.signal, { concurrency: 2 })]).then(() => undefined));
    try {
      const run = await until("a successful run of days", async () => (await engine!.runs("days", 5)).find((r) => r.state === "success"));
      expect(run.trigger).toBe("schedule");
      // A pipeline file added while it runs is taken in at the next look.
      writeFileSync(join(project, "pipelines/later.ts"), DAYS.replaceAll("days", "later"));
      await until("the added pipeline", () => (engine!.pipelines().some((p) => p.id === "later") ? true : undefined));
      await until("the reload's log line", () => lines.find((l) => l.startsWith("pipeline files reloaded: 2 pipeline(s); added later")));
      expect(lines.some((l) => /^scheduler \S+ leads$/.test(l))).toBe(true);
    } finally {
      stop.abort();
      await running;
    }
  });

  it("idem dev does not call its own starting scheduler down, whatever lead the one before it left", async () => {
    writeProject(``, { "days.ts": DAYS });
    engine = await openProject(await loadConfig(project), { pipelines: true });
    // Yesterday's scheduler: its lease lapsed a day ago.
    await engine.store.tryLead({ role: "scheduler", holder: "host:1:yesterday", now: Date.now() - 86_400_000, ttlMs: 15_000 });
    const stop = new AbortController();
    const lines = eventLines(engine.events);
    const body = async () => {
      // The watchdog has passed once before this process's scheduler starts.
      await until("the watchdog's first pass", () => lines.find((l) => / checks promises$/.test(l)));
      await engine!.runScheduler(stop.signal);
    };
    const running = engine.runLongLived("dev", stop.signal, body, { startsScheduler: true });
    try {
      await until("the scheduler to lead", () => lines.find((l) => /^scheduler \S+ leads$/.test(l)));
      expect(await engine.incidents({})).toEqual([]);
    } finally {
      stop.abort();
      await running;
    }
  });
});
