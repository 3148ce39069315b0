import { request } from "node:http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { allowedHostsFor, isLoopback, startServer, type RunningServer } from "../../src/http/server.ts";
import { Engine } from "../../src/engine/engine.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { ScheduleHarness } from "../support/scheduling.ts";
import { SseClient } from "../support/sse.ts";

const sales = pipeline(
  "sales",
  { schedule: daily({ at: "02:00", timezone: "Europe/London" }), start: "2026-09-01" },
  { load: { run: () => ({ rows: 1 }) }, report: { after: ["load"], run: () => {} } },
);

let h: ScheduleHarness;
let server: RunningServer | null = null;
let clients: SseClient[] = [];
let token: string;

beforeEach(async () => {
  h = await ScheduleHarness.open([sales], "2026-09-03T03:00:00Z");
  await h.at("2026-09-03T03:00:00Z");
  token = (await h.engine.createToken({ name: "alice", role: "operator", actor: "root" })).secret;
});
afterEach(async () => {
  for (const c of clients) c.close();
  clients = [];
  await server?.close();
  server = null;
  await h.engine.changeFeed().close();
  await h?.close();
});

async function serve(credentialRecheckMs?: number): Promise<RunningServer> {
  server = await startServer(h.engine, { host: "127.0.0.1", port: 0, localUser: "ana", credentialRecheckMs });
  return server;
}

function rawGet(port: number, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, headers: { host, authorization: `Bearer ${token}` } }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("idem serve", () => {
  it("refuses to listen off loopback while no token exists", async () => {
    await h.engine.revokeToken("alice", { actor: "root" });
    await expect(startServer(h.engine, { host: "0.0.0.0", port: 0, localUser: "ana" })).rejects.toThrow(/^host 0.0.0.0 is not loopback: create a token first/);
    expect([isLoopback("127.0.0.1"), isLoopback("127.3.4.5"), isLoopback("::1"), isLoopback("[::1]"), isLoopback("localhost"), isLoopback("0.0.0.0"), isLoopback("10.0.0.1")]).toEqual([true, true, true, true, true, false, false]);
    expect(allowedHostsFor("127.0.0.1").sort()).toEqual(["127.0.0.1", "[::1]", "localhost"]);
    expect(allowedHostsFor("0.0.0.0", ["idem.example.org"])).toEqual(["idem.example.org"]);
  });

  it("answers a foreign Host header with 403 over a real socket, and its own with 200", async () => {
    const { port } = await serve();
    const foreign = await rawGet(port, "/api/v1/pipelines", `rebind.evil.example:${port}`);
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body)).toMatchObject({ field: "Host" });
    expect((await rawGet(port, "/api/v1/pipelines", `localhost:${port}`)).status).toBe(200);
  });
});

describe("the events stream", () => {
  it("carries run and task changes as they happen, and replays what a reconnecting client missed", async () => {
    const { url } = await serve();
    const headers = { authorization: `Bearer ${token}` };
    const first = await SseClient.open(`${url}/api/v1/events`, headers);
    clients.push(first);
    expect(first.status).toBe(200);
    await first.waitFor((e) => e.event === "hello");

    // A manual run is for a closed interval: time moves past 2026-09-10 (the scheduler does not tick).
    h.clock.set("2026-09-12T03:00:00Z");
    const triggered = await fetch(`${url}/api/v1/pipelines/sales/runs`, {
      method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ date: "2026-09-10", reason: "test" }),
    });
    expect(triggered.status).toBe(201);
    const created = await first.waitFor((e) => e.event === "run" && e.data.runId === "sales@2026-09-10");
    expect(created.data).toMatchObject({ kind: "run", pipelineId: "sales", businessDate: "2026-09-10", state: "queued" });
    first.close();

    // While nobody listens, the run is worked on.
    await h.work();
    const again = await SseClient.open(`${url}/api/v1/events`, { ...headers, "last-event-id": created.id! });
    clients.push(again);
    const done = await again.waitFor((e) => e.event === "run" && e.data.state === "success");
    const replayed = again.events.filter((e) => e.event !== "hello").map((e) => `${e.event} ${e.data.taskId ?? "-"} ${e.data.state}`);
    expect(replayed).toEqual(["task load running", "run - running", "task load success", "task report queued", "task report running", "task report success", "run - success"]);
    const ids = again.events.filter((e) => e.id !== null).map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(ids[0]).toBe(Number(created.id) + 1);
    expect(done.data.runId).toBe("sales@2026-09-10");
  });

  it("ends an open stream soon after its token is revoked, saying so, and refuses the reconnect", async () => {
    const { url } = await serve(100);
    const bob = (await h.engine.createToken({ name: "bob", role: "viewer", actor: "root" })).secret;
    const revoked = await SseClient.open(`${url}/api/v1/events`, { authorization: `Bearer ${bob}` });
    const kept = await SseClient.open(`${url}/api/v1/events`, { authorization: `Bearer ${token}` });
    clients.push(revoked, kept);
    await revoked.waitFor((e) => e.event === "hello");
    await kept.waitFor((e) => e.event === "hello");
    await new Promise((resolve) => setTimeout(resolve, 300)); // a few checks pass while the token holds
    expect(revoked.endedByServer).toBe(false);

    await h.engine.revokeToken("bob", { actor: "root" });
    const notice = await revoked.waitFor((e) => e.event === "revoked", 5_000);
    expect(notice.data.detail).toContain("revoked");
    await revoked.waitForEnd(5_000);
    expect(kept.endedByServer).toBe(false);
    const again = await fetch(`${url}/api/v1/events`, { headers: { authorization: `Bearer ${bob}` } });
    expect(again.status).toBe(401);
    await again.body?.cancel();
  });

  it("tells a client whose Last-Event-ID the store does not know to reload; refuses a malformed one", async () => {
    const { url } = await serve();
    const headers = { authorization: `Bearer ${token}` };
    const ahead = await SseClient.open(`${url}/api/v1/events`, { ...headers, "last-event-id": "99999999" });
    clients.push(ahead);
    await ahead.waitFor((e) => e.event === "reset");
    const malformed = await fetch(`${url}/api/v1/events`, { headers: { ...headers, "last-event-id": "abc" } });
    expect(malformed.status).toBe(422);
    expect(await malformed.json()).toMatchObject({ field: "Last-Event-ID" });
    const anonymous = await fetch(`${url}/api/v1/events`);
    expect(anonymous.status).toBe(401);
  });

  it.skipIf(process.env.IDEM_TEST_ENGINE_STORE !== "postgres")("several servers against one PostgreSQL: a change made through one reaches a stream of the other", async () => {
    const { url: first } = await serve();
    const other = new PostgresStore({ connectionString: process.env.IDEM_TEST_PG_URL!, schema: (h.store as PostgresStore).schema, poolSize: 2 });
    await other.migrate();
    const engine = new Engine({ store: other, clock: h.clock, stateDir: h.dir, pipelines: [sales] });
    const second = await startServer(engine, { host: "127.0.0.1", port: 0, localUser: "ana" });
    try {
      const headers = { authorization: `Bearer ${token}` };
      const listener = await SseClient.open(`${second.url}/api/v1/events`, headers);
      clients.push(listener);
      await listener.waitFor((e) => e.event === "hello");
      h.clock.set("2026-09-12T03:00:00Z"); // 2026-09-11 has ended; the scheduler does not tick
      const triggered = await fetch(`${first}/api/v1/pipelines/sales/runs`, {
        method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ date: "2026-09-11", reason: "from the first server" }),
      });
      expect(triggered.status).toBe(201);
      const event = await listener.waitFor((e) => e.event === "run" && e.data.runId === "sales@2026-09-11");
      expect(event.data.state).toBe("queued");
      const audit = await (await fetch(`${second.url}/api/v1/audit?actor=alice`, { headers })).json();
      expect(audit.items[0]).toMatchObject({ action: "trigger", reason: "from the first server" });
    } finally {
      await engine.changeFeed().close();
      await second.close();
      await other.close();
    }
  });
});
