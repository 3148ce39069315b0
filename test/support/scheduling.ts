import { mkdtempSync, rmSync } from "node:fs";
import { EngineEvents } from "../../src/engine/events/engine-events.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Pipeline } from "../../src/core/pipeline/types.ts";
import { Engine } from "../../src/engine/engine.ts";
import { Scheduler } from "../../src/engine/scheduler/scheduler.ts";
import { Worker } from "../../src/engine/worker/worker.ts";
import type { Store } from "../../src/store/port.ts";
import { openTestStore } from "./test-store.ts";
import { FakeClock } from "../../src/testing.ts";

/**
 * A scheduler and an in-process worker on a real SQLite file, driven by a fake clock: `at(t)`
 * moves time there, ticks the scheduler until it creates nothing more, and runs every task that
 * is eligible at that moment.
 */
export class ScheduleHarness {
  readonly clock: FakeClock;
  readonly store: Store;
  readonly #closeStore: () => Promise<void>;
  readonly engine: Engine;
  readonly scheduler: Scheduler;
  readonly dir: string;
  readonly pipelines: Pipeline[];
  /** Runs of each pipeline that were queued or running at once, sampled after every tick. */
  readonly mostLiveRuns = new Map<string, number>();

  private constructor(dir: string, store: Store, closeStore: () => Promise<void>, clock: FakeClock, pipelines: Pipeline[]) {
    this.dir = dir;
    this.store = store;
    this.#closeStore = closeStore;
    this.clock = clock;
    this.pipelines = pipelines;
    this.engine = new Engine({ store, clock, stateDir: join(dir, ".idem"), pipelines, projectDir: dir, random: () => 0 });
    this.scheduler = new Scheduler({ store, clock, pipelines, holder: "scheduler-1", random: () => 0 });
  }

  static async open(pipelines: Pipeline[], start: string): Promise<ScheduleHarness> {
    const dir = mkdtempSync(join(tmpdir(), "idem-sched-"));
    const { store, close } = await openTestStore(dir);
    return new ScheduleHarness(dir, store, close, new FakeClock(start), pipelines);
  }

  async at(instant: string | number): Promise<void> {
    this.clock.set(instant);
    for (let round = 0; round < 10_000; round++) {
      const tick = await this.scheduler.tick();
      await this.#sampleLiveRuns();
      const ran = await this.work();
      if (tick.runsCreated === 0 && tick.attemptsLost === 0 && ran === 0) return;
    }
    throw new Error("the schedule did not settle in 10,000 rounds");
  }

  /** Runs what is eligible now; returns how many attempts ran. */
  async work(concurrency = 4): Promise<number> {
    let ran = 0;
    const events = new EngineEvents();
    const worker = new Worker({
      store: this.store,
      clock: this.clock,
      pipelines: this.pipelines,
      stateDir: join(this.dir, ".idem"),
      workerId: "worker-1",
      concurrency,
      limits: { maxActiveTasks: Object.fromEntries(this.pipelines.map((p) => [p.id, p.maxActiveTasks])) },
      events,
    });
    events.on("attempt:finished", () => void ran++);
    await worker.run(new AbortController().signal, async () => true);
    return ran;
  }

  async runs(pipelineId: string) {
    return (await this.store.listRuns({ pipelineId, limit: 10_000 })).reverse();
  }

  async #sampleLiveRuns() {
    for (const p of this.pipelines) {
      const live = await this.store.countLiveRuns(p.id);
      this.mostLiveRuns.set(p.id, Math.max(this.mostLiveRuns.get(p.id) ?? 0, live));
    }
  }

  async close() {
    await this.#closeStore();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
