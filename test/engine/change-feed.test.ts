import { describe, expect, it } from "vitest";
import { ChangeFeed } from "../../src/engine/changes/change-feed.ts";
import type { ChangeEvent, Store } from "../../src/store/port.ts";
import { FakeClock } from "../../src/testing.ts";

/** A feed table whose rows become visible when a test says so, as commits out of id order do on PostgreSQL. */
function feedStore(visible: number[]) {
  const change = (id: number): ChangeEvent => ({
    id, kind: "task", state: "success", runId: `p@${id}`, taskId: "a", tryNumber: 1, pipelineId: "p", businessDate: "2026-09-01",
    incidentKey: null, incidentKind: null, dataset: null,
  });
  const store = {
    async readChanges(afterId: number, limit: number) {
      return [...visible].sort((a, b) => a - b).filter((id) => id > afterId).slice(0, limit).map(change);
    },
    async changeBounds() {
      return { newest: visible.length ? Math.max(...visible) : 0, oldest: visible.length ? Math.min(...visible) : null };
    },
  };
  return store as unknown as Store;
}

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("the change feed's reader", () => {
  it("holds changes behind a gap in the ids until the gap fills, so they arrive in order and none is lost", async () => {
    const visible = [1];
    const clock = new FakeClock("2026-09-01T00:00:00Z");
    const feed = new ChangeFeed(feedStore(visible), clock);
    const seen: number[] = [];
    const stop = await feed.subscribe(null, { onChanges: (c) => seen.push(...c.map((e) => e.id)), onReset: () => seen.push(-1) });
    visible.push(3); // id 2 belongs to a transaction that has not committed yet
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual([]);
    visible.push(2);
    await until("2 and 3", () => seen.length === 2);
    expect(seen).toEqual([2, 3]);
    stop();
    await feed.close();
  });

  it("moves past a gap that never fills (a rolled-back transaction) once it is 2 s old", async () => {
    const visible = [1, 2];
    const clock = new FakeClock("2026-09-01T00:00:00Z");
    const feed = new ChangeFeed(feedStore(visible), clock);
    const seen: number[] = [];
    await feed.subscribe(null, { onChanges: (c) => seen.push(...c.map((e) => e.id)), onReset: () => seen.push(-1) });
    visible.push(4);
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual([]);
    clock.advance(2_001);
    await until("4", () => seen.length === 1);
    expect(seen).toEqual([4]);
    await feed.close();
  });

  it("replays from a Last-Event-ID, and tells a client asking for pruned or unknown ids to reset", async () => {
    const visible = [5, 6, 7, 8];
    const feed = new ChangeFeed(feedStore(visible), new FakeClock(0));
    const replayed: number[] = [];
    await feed.subscribe(6, { onChanges: (c) => replayed.push(...c.map((e) => e.id)), onReset: () => replayed.push(-1) });
    await until("replay", () => replayed.length === 2);
    expect(replayed).toEqual([7, 8]);
    const resets: string[] = [];
    await feed.subscribe(2, { onChanges: () => {}, onReset: () => resets.push("pruned") });
    await feed.subscribe(99, { onChanges: () => {}, onReset: () => resets.push("unknown") });
    expect(resets).toEqual(["pruned", "unknown"]);
    await feed.close();
  });
});
