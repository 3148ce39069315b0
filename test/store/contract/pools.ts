import { describe, expect, it } from "vitest";
import { newRun, tasksOf } from "../../support/shapes.ts";
import { T0, type Harness } from "./harness.ts";

export function poolsContract(h: Harness): void {
  describe("PoolStore", () => {
    const { store, saveGraph, claim } = h;

    it("never lets a pool's running slots exceed its size", async () => {
      await saveGraph("flat", []);
      await store.setPool({ name: "db", slots: 1, at: T0 });
      await store.createRunIfAbsent(newRun({ graphVersion: "flat", tasks: tasksOf(["x", "y"], [], { x: { pool: "db" }, y: { pool: "db" } }) }));
      expect(await claim()).toHaveLength(1);
      expect(await claim()).toHaveLength(0);
      const [pool] = await store.listPools();
      expect(pool).toMatchObject({ name: "db", slots: 1, used: 1, holders: [{ runId: "p@2026-09-01", slots: 1, workerId: "w1" }] });
    });

    it("creates missing pools without changing one an operator set, and deletes only what exists", async () => {
      await store.setPool({ name: "db", slots: 5, description: "warehouse", at: T0 });
      await store.ensurePools([{ name: "db", slots: 1 }, { name: "api", slots: 2 }], T0 + 1);
      expect((await store.listPools()).map((p) => [p.name, p.slots, p.description])).toEqual([["api", 2, null], ["db", 5, "warehouse"]]);
      expect(await store.deletePool("api")).toBe(true);
      expect(await store.deletePool("api")).toBe(false);
      expect((await store.listPools()).map((p) => p.name)).toEqual(["db"]);
    });
  });
}
