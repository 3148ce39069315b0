import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { manual } from "../../src/core/time/index.ts";
import { Engine } from "../../src/engine/engine.ts";
import { signWebhook } from "../../src/engine/signing/webhook-signature.ts";
import { startServer, type RunningServer } from "../../src/http/server.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

const SECRET_VARIABLE = "IDEM_TEST_DATASET_HOOK_SECRET";
const SECRET = "whsec_4f1c9a0e7d";

// Runs only when the data comes: for an event of business date D, the interval of D.
const consumer = pipeline("daily_prices", { schedule: manual({ timezone: "UTC" }), start: "2026-11-01", triggerOn: ["vendor_prices"] }, { load: { run: () => ({ rows: 1 }) } });

let h: ScheduleHarness;
let server: RunningServer | null = null;
let operator: string;
let viewer: string;

beforeEach(async () => {
  h = await ScheduleHarness.open([consumer], "2026-11-05T09:00:00Z");
  operator = (await h.engine.createToken({ name: "vendor-sftp", role: "operator", actor: "root" })).secret;
  viewer = (await h.engine.createToken({ name: "grafana", role: "viewer", actor: "root" })).secret;
  process.env[SECRET_VARIABLE] = SECRET;
});
afterEach(async () => {
  await server?.close();
  server = null;
  await h?.close();
});

/** A server on 127.0.0.1 over the harness's store and clock; `webhook` as `datasetWebhook` in idem.config.ts resolves. */
async function serve(webhook: { secretEnv: string; toleranceMs: number } | null = null): Promise<RunningServer> {
  const engine = webhook
    ? new Engine({ store: h.store, clock: h.clock, stateDir: join(h.dir, ".idem"), pipelines: [consumer], datasetWebhook: webhook })
    : h.engine;
  server = await startServer(engine, { host: "127.0.0.1", port: 0, localUser: "ana" });
  return server;
}

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  const response = await fetch(server!.url + path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: text });
  const type = response.headers.get("content-type") ?? "";
  return { status: response.status, type, headers: response.headers, body: (type.includes("json") ? await response.json() : await response.text()) as any };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe("POST /api/v1/datasets/{name}/events", () => {
  it("records an outside producer's event (201), answers a repeated key with the first event (200) whatever the body says, and triggers the consumer once", async () => {
    await serve();
    const first = await post("/api/v1/datasets/vendor_prices/events", { businessDate: "2026-11-04", idempotencyKey: "prices-2026-11-04", summary: { rows: 120 } }, bearer(operator));
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      created: true,
      event: { dataset: "vendor_prices", businessDate: "2026-11-04", source: "api", actor: "vendor-sftp", idempotencyKey: "prices-2026-11-04", summary: '{"rows":120}', at: "2026-11-05T09:00:00.000Z" },
      audit: { action: "dataset-event", actor: "vendor-sftp", details: { dataset: "vendor_prices", source: "api", idempotencyKey: "prices-2026-11-04" } },
    });
    expect(first.headers.get("idempotent-replayed")).toBeNull();

    h.clock.set("2026-11-05T09:01:00Z");
    const again = await post("/api/v1/datasets/vendor_prices/events", { businessDate: "2026-11-05", idempotencyKey: "prices-2026-11-04" }, bearer(operator));
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toMatchObject({ created: false, audit: null, event: first.body.event, ignored: ["businessDate", "summary"] });
    expect(again.body.note).toBe(
      'idempotency key "prices-2026-11-04" of vendor_prices was first used at 2026-11-05T09:00:00.000Z (event 1, by vendor-sftp via api); nothing was recorded; this request\'s businessDate and summary differ from the first and were ignored',
    );

    await h.at("2026-11-05T10:00:00Z");
    expect((await h.runs("daily_prices")).map((r) => [r.businessDate, r.trigger, r.state])).toEqual([["2026-11-04", "data", "success"]]);
    const listed = await fetch(server!.url + "/api/v1/datasets/vendor_prices/events", { headers: bearer(viewer) }).then((r) => r.json());
    expect(listed.items.map((e: { source: string; idempotencyKey: string }) => [e.source, e.idempotencyKey])).toEqual([["api", "prices-2026-11-04"]]);
  });

  it("shows an outside event on the UI's datasets page with its source, actor and key", async () => {
    await serve();
    await post("/api/v1/datasets/vendor_prices/events", { businessDate: "2026-11-04", idempotencyKey: "prices-2026-11-04" }, bearer(operator));
    const page = await fetch(server!.url + "/ui/datasets", { headers: bearer(viewer) }).then((r) => r.text());
    expect(page).toContain('<td>api, by <span class="mono">vendor-sftp</span></td><td>key <span class="mono">prices-2026-11-04</span></td>');
  });

  it("answers bad input with a problem document naming the field, and writes nothing", async () => {
    await serve();
    const send = (name: string, body: unknown, headers: Record<string, string> = bearer(operator)) => post(`/api/v1/datasets/${name}/events`, body, headers);
    const ok = { businessDate: "2026-11-04", idempotencyKey: "k1" };

    const unknown = await send("vendor_pricez", ok);
    expect([unknown.status, unknown.type, unknown.body.field, unknown.body.detail]).toEqual([
      404, "application/problem+json", "name", 'unknown dataset "vendor_pricez": no pipeline produces, publishes, waits on or promises it (known: vendor_prices)',
    ]);
    const badDate = await send("vendor_prices", { ...ok, businessDate: "2026-13-01" });
    expect([badDate.status, badDate.body.field]).toEqual([422, "businessDate"]);
    expect(badDate.body.detail).toContain("2026-13-01");
    const long = await send("vendor_prices", { ...ok, idempotencyKey: "k".repeat(256) });
    expect([long.status, long.body.field]).toEqual([422, "idempotencyKey"]);
    const control = await send("vendor_prices", { ...ok, idempotencyKey: "k\u0007" });
    expect([control.status, control.body.field, control.body.detail]).toEqual([422, "idempotencyKey", "body idempotencyKey: no control characters"]);
    const missing = await send("vendor_prices", { businessDate: "2026-11-04" });
    expect([missing.status, missing.body.field]).toEqual([422, "idempotencyKey"]);
    const big = await send("vendor_prices", { ...ok, summary: { text: "x".repeat(70_000) } });
    expect([big.status, big.body.field]).toEqual([422, "summary"]);

    expect((await send("vendor_prices", ok, bearer(viewer))).status).toBe(403);
    expect((await send("vendor_prices", ok, {})).status).toBe(401);
    expect(await h.store.listDatasetEvents({})).toEqual([]);
  });

  it("is in the OpenAPI document with its schema, and the signed webhook with its signature scheme", async () => {
    await serve();
    const doc = await fetch(server!.url + "/api/v1/openapi.json").then((r) => r.json());
    const operation = doc.paths["/datasets/{name}/events"].post;
    const schema = operation.requestBody.content["application/json"].schema;
    expect(schema.required).toEqual(["businessDate", "idempotencyKey"]);
    expect(schema.properties.idempotencyKey).toMatchObject({ maxLength: 255, minLength: 1 });
    expect(operation.description).not.toContain("requires a reason");
    const hook = doc.paths["/hooks/datasets/{name}"].post;
    expect(hook.security).toEqual([{ signature: [] }]);
    expect(doc.components.securitySchemes.signature).toMatchObject({ type: "apiKey", in: "header", name: "Idem-Signature" });
  });
});

describe("POST /api/v1/hooks/datasets/{name}: the signed webhook", () => {
  const body = JSON.stringify({ businessDate: "2026-11-04", idempotencyKey: "hook-1" });
  const now = () => Math.floor(h.clock.now() / 1000);
  const hook = (text: string, signature?: string) => post("/api/v1/hooks/datasets/vendor_prices", text, signature === undefined ? {} : { "idem-signature": signature });

  it("takes a request signed with the secret, with no token and no CSRF token, as a webhook event", async () => {
    await serve({ secretEnv: SECRET_VARIABLE, toleranceMs: 300_000 });
    const signed = await hook(body, signWebhook(SECRET, now(), body));
    expect(signed.status).toBe(201);
    expect(signed.body).toMatchObject({ created: true, event: { source: "webhook", actor: "webhook", idempotencyKey: "hook-1" }, audit: { actor: "webhook", details: { source: "webhook" } } });
    // Sent again (a retry), signed again: the first event.
    const retried = await hook(body, signWebhook(SECRET, now() + 30, body));
    expect([retried.status, retried.body.created, retried.body.event.id]).toEqual([200, false, signed.body.event.id]);
    // A rotated secret's old and new signatures side by side: one holding is enough.
    const rotated = JSON.stringify({ businessDate: "2026-11-05", idempotencyKey: "hook-2" });
    const good = signWebhook(SECRET, now(), rotated).split(",v1=")[1];
    expect((await hook(rotated, `t=${now()},v1=${"0".repeat(64)},v1=${good}`)).status).toBe(201);
  });

  it("refuses a wrong, stale, malformed or missing signature with 401 before reading the body, and writes nothing", async () => {
    await serve({ secretEnv: SECRET_VARIABLE, toleranceMs: 300_000 });
    const refused = async (text: string, signature: string | undefined, detail: RegExp) => {
      const answer = await hook(text, signature);
      expect([answer.status, answer.type, answer.body.field], String(signature)).toEqual([401, "application/problem+json", "Idem-Signature"]);
      expect(answer.body.detail).toMatch(detail);
    };
    await refused(body, signWebhook("another secret", now(), body), /does not match/);
    await refused(body.replace("hook-1", "hook-9"), signWebhook(SECRET, now(), body), /does not match/);
    await refused(body, signWebhook(SECRET, now() - 301, body), /^stale signature: its timestamp is 301 s from the server's clock \(at most 300 s\)$/);
    await refused(body, signWebhook(SECRET, now() + 600, body), /^stale signature/);
    await refused(body, "v1=abc", /^malformed signature/);
    await refused(body, undefined, /^no signature: send the Idem-Signature header/);
    // Unsigned bad input learns nothing of the schema: 401, not 422.
    await refused("{not json", undefined, /^no signature/);
    expect(await h.store.listDatasetEvents({})).toEqual([]);

    // Signed, the body is judged as the API judges it.
    const badDate = JSON.stringify({ businessDate: "2026-11-31", idempotencyKey: "x" });
    const answer = await hook(badDate, signWebhook(SECRET, now(), badDate));
    expect([answer.status, answer.body.field]).toEqual([422, "businessDate"]);
  });

  it("answers 404 with no webhook configured, and 503 when its secret variable is not set", async () => {
    await serve();
    const off = await hook(body, signWebhook(SECRET, now(), body));
    expect([off.status, off.body.detail]).toEqual([404, "no dataset webhook is configured (datasetWebhook in idem.config.ts)"]);
    await server!.close();
    delete process.env[SECRET_VARIABLE];
    await serve({ secretEnv: SECRET_VARIABLE, toleranceMs: 300_000 });
    const unset = await hook(body, signWebhook(SECRET, now(), body));
    expect([unset.status, unset.body.detail]).toEqual([503, `the dataset webhook's secret is not set: ${SECRET_VARIABLE} is empty in the server's environment`]);
  });
});
