import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Socket } from "node:net";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { dropSchema, freshSchema, testPostgresUrl } from "../process/postgres-support.ts";
import { newRun, tasksOf } from "../support/shapes.ts";

const url = testPostgresUrl();
const T0 = Date.parse("2026-09-02T02:00:00Z");

/**
 * What reaches the server's socket: the statements of one round trip of a transaction go out
 * together, in one write (`Tx.cork`), not one write per protocol message (pg writes each of a
 * prepared statement's parse, bind, execute and sync on its own). Counted on the one connection
 * of a store whose pool holds one.
 */
describe.skipIf(!url)("PostgreSQL: a round trip's statements in one socket write", () => {
  const schema = freshSchema();
  let store: PostgresStore;
  let writes = 0;

  beforeAll(async () => {
    store = new PostgresStore({ connectionString: url!, schema, poolSize: 1 });
    await store.migrate();
    await store.savePipelineVersion({ pipelineId: "p", version: "v1", definition: {}, edges: [{ parent: "a", child: "b" }], createdAt: T0 });
    const client = await store.pool.connect();
    const stream = (client as unknown as { connection: { stream: Socket } }).connection.stream;
    for (const method of ["_write", "_writev"] as const) {
      const original = (stream as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!;
      (stream as unknown as Record<string, unknown>)[method] = function (this: Socket, ...args: unknown[]) {
        writes++;
        return original.apply(this, args);
      };
    }
    client.release();
  });

  afterAll(async () => {
    await store?.close();
    await dropSchema(url!, schema);
  });

  const counted = async <T>(call: () => Promise<T>): Promise<{ result: T; writes: number }> => {
    const before = writes;
    const result = await call();
    return { result, writes: writes - before };
  };

  it("a claim is two writes (BEGIN and its reads; the starts and COMMIT), a finish with the next claim three", async () => {
    await store.createRunIfAbsent(newRun({ tasks: tasksOf(["a", "b"], [["a", "b"]]) }));
    const request = { workerId: "w1", pid: 1, limit: 5, now: T0, leaseMs: 30_000, logDir: "/logs" };
    const claim = await counted(() => store.claimReady(request));
    expect(claim.result.map((c) => c.taskId)).toEqual(["a"]);
    expect(claim.writes).toBe(2);
    const finish = {
      attemptId: claim.result[0]!.attemptId, workerId: "w1", now: T0 + 1, outcome: "success" as const, retryable: true, retryAt: null,
      exitCode: 0, errorClass: null, errorMessage: null, summary: null, skipReason: null,
    };
    const together = await counted(() => store.finishAndClaim({ finishes: [finish], claim: { ...request, now: T0 + 1 } }));
    expect(together.result.claimed.map((c) => c.taskId)).toEqual(["b"]);
    expect(together.writes).toBe(3);
  });
});
