import { describe, expect, it } from "vitest";
import { T0, type Harness } from "./harness.ts";

export function workersContract(h: Harness): void {
  describe("WorkerStore", () => {
    const { store } = h;

    it("lets one holder lead at a time, and a new one take over an expired lease with a higher term", async () => {
      const first = await store.tryLead({ role: "scheduler", holder: "s1", now: T0, ttlMs: 1_000 });
      const second = await store.tryLead({ role: "scheduler", holder: "s2", now: T0 + 500, ttlMs: 1_000 });
      const takeover = await store.tryLead({ role: "scheduler", holder: "s2", now: T0 + 1_001, ttlMs: 1_000 });
      expect([first.leader, second.leader, takeover.leader]).toEqual([true, false, true]);
      expect([first.term, takeover.term]).toEqual([1, 2]);
    });

    it("keeps one row per worker, seen last at its latest heartbeat, and forgets it when it leaves", async () => {
      await store.heartbeatWorker({ workerId: "w1", host: "h1", pid: 11, concurrency: 4, at: T0 });
      await store.heartbeatWorker({ workerId: "w2", host: "h2", pid: 22, concurrency: 8, at: T0 + 1 });
      await store.heartbeatWorker({ workerId: "w1", host: "h1", pid: 11, concurrency: 4, at: T0 + 5_000 });
      const workers = (await store.listWorkers()).sort((a, b) => a.workerId.localeCompare(b.workerId));
      expect(workers).toEqual([
        { workerId: "w1", host: "h1", pid: 11, concurrency: 4, startedAt: T0, lastSeen: T0 + 5_000 },
        { workerId: "w2", host: "h2", pid: 22, concurrency: 8, startedAt: T0 + 1, lastSeen: T0 + 1 },
      ]);
      await store.removeWorker("w1");
      expect((await store.listWorkers()).map((w) => w.workerId)).toEqual(["w2"]);
    });

    it("shows who leads, lets only the holder resign, and gives the next holder a higher term", async () => {
      expect(await store.getLead("scheduler")).toBeNull();
      const first = await store.tryLead({ role: "scheduler", holder: "s1", now: T0, ttlMs: 15_000 });
      expect(await store.getLead("scheduler")).toMatchObject({ holder: "s1", term: first.term, expiresAt: T0 + 15_000 });
      await store.resignLead("scheduler", "s2"); // not the holder: nothing changes
      expect((await store.tryLead({ role: "scheduler", holder: "s2", now: T0 + 1, ttlMs: 15_000 })).leader).toBe(false);
      await store.resignLead("scheduler", "s1");
      const second = await store.tryLead({ role: "scheduler", holder: "s2", now: T0 + 2, ttlMs: 15_000 });
      expect(second.leader).toBe(true);
      expect(second.term).toBeGreaterThan(first.term);
    });
  });
}
