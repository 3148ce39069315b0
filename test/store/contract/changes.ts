import { describe, expect, it } from "vitest";
import { T0, describeChannel, type Harness } from "./harness.ts";

export function changesContract(h: Harness): void {
  describe("ChangeFeedStore", () => {
    const { store, claim, finish, createStandardRun } = h;

    it("records an incident's acknowledgement (a snooze too) and its resolution by a person, not a change to a resolved one", async () => {
      await store.openIncident({ key: "sla:x", kind: "sla_missed", dataset: "x", pipelineId: "p", businessDate: "2026-09-01", runId: null, message: "missed", notify: [], at: T0 });
      await store.actOnIncident({ key: "sla:x", kind: "acknowledge", actor: "ana", reason: "on it", until: null, at: T0 + 1 });
      await store.actOnIncident({ key: "sla:x", kind: "acknowledge", actor: "bo", reason: "later", until: T0 + 60_000, at: T0 + 2 });
      await store.actOnIncident({ key: "sla:x", kind: "resolve", actor: "ana", reason: "fixed", at: T0 + 3 });
      expect((await store.readChanges(0, 100)).map((c) => [c.incidentKey, c.state])).toEqual([
        ["sla:x", "open"], ["sla:x", "acknowledged"], ["sla:x", "acknowledged"], ["sla:x", "resolved"],
      ]);
    });

    it("records every change of a run, a task instance and an incident in order, with the run's pipeline and date", async () => {
      expect(await store.changeBounds()).toEqual({ newest: 0, oldest: null });
      await createStandardRun();
      const [a] = await claim();
      await store.finishAttempt(finish(a!));
      await store.openIncident({ key: "late:x", kind: "late", dataset: "x", pipelineId: "p", businessDate: "2026-09-01", runId: null, message: "late", notify: [], at: T0 });
      await store.resolveIncident("late:x", T0 + 1, "published");
      const changes = await store.readChanges(0, 100);
      const seen = changes.map((c) => [c.kind, c.taskId ?? c.incidentKey, c.state]);
      expect(seen).toEqual([
        ["run", null, "queued"],
        ["task", "a", "running"],
        ["run", null, "running"],
        ["task", "a", "success"],
        ["task", "b", "queued"],
        ["task", "d", "queued"],
        ["incident", "late:x", "open"],
        ["incident", "late:x", "resolved"],
      ].map(([kind, id, state]) => [kind, kind === "run" ? null : id, state]));
      const ids = changes.map((c) => c.id);
      expect(ids).toEqual([...ids].sort((x, y) => x - y));
      expect(changes[1]).toMatchObject({ runId: "p@2026-09-01", pipelineId: "p", businessDate: "2026-09-01", tryNumber: 1 });
      expect(changes[6]).toMatchObject({ incidentKind: "late", dataset: "x", pipelineId: "p", businessDate: "2026-09-01" });
      expect(await store.readChanges(ids[5]!, 100)).toHaveLength(2);
      expect(await store.readChanges(ids[0]!, 2)).toHaveLength(2);
      expect(await store.changeBounds()).toEqual({ newest: ids.at(-1), oldest: ids[0] });
    });

    describeChannel(h, "watchChanges", "a change is committed", () => createStandardRun());
  });
}
