import { eventsLoggedTo } from "../support/events.ts";
import { createHmac, timingSafeEqual } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SMTPServer } from "smtp-server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { IncidentKind } from "../../src/core/model/incidents.ts";
import { AlertDispatcher, type DispatcherOptions } from "../../src/engine/freshness/alert-dispatcher.ts";
import { webhookSignatureFault } from "../../src/engine/signing/webhook-signature.ts";
import type { NewIncident, Store } from "../../src/store/port.ts";
import { FakeClock } from "../../src/testing.ts";
import { openTestStore } from "../support/test-store.ts";

const SLACK_PATH = "/services/T0001/B0001/slackSecretPath42";
const ROUTING_KEY = "R0UTINGKEY0123456789abcdef012345";
const SIGNING_SECRET = "whsec_signing_secret_7f7f";
const SMTP_PASSWORD = "smtp-pass-word-99";

let dir: string;
let store: Store;
let closeStore: () => Promise<void>;
let clock: FakeClock;
let http: Server;
let base: string;
/** What the HTTP peer was sent, by path, with what it found wrong in each (Slack's and PagerDuty's documented shapes). */
let received: { path: string; body: any; problems: string[]; headers: IncomingMessage["headers"] }[];
let failPaths: Set<string>;
const logs: string[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "idem-notifiers-"));
  ({ store, close: closeStore } = await openTestStore(dir));
  clock = new FakeClock("2026-09-02T06:00:00Z");
  received = [];
  failPaths = new Set();
  logs.length = 0;
  http = createServer((request, response) => {
    let raw = "";
    request.on("data", (d) => (raw += d));
    request.on("end", () => {
      const path = request.url ?? "";
      if (failPaths.has(path)) return void response.writeHead(500).end("down for maintenance");
      const body = JSON.parse(raw);
      if (path === SLACK_PATH) {
        const problems = slackProblems(body);
        received.push({ path, body, problems, headers: request.headers });
        return void (problems.length ? response.writeHead(400).end("invalid_blocks") : response.writeHead(200).end("ok"));
      }
      if (path === "/v2/enqueue") {
        const problems = pagerdutyProblems(body);
        received.push({ path, body, problems, headers: request.headers });
        if (problems.length) return void response.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ status: "invalid event", message: "Event object is invalid", errors: problems }));
        return void response.writeHead(202, { "content-type": "application/json" }).end(JSON.stringify({ status: "success", message: "Event processed", dedup_key: body.dedup_key }));
      }
      const problems = signatureProblems(raw, request.headers["idem-signature"], SIGNING_SECRET, clock.now());
      received.push({ path, body, problems, headers: request.headers });
      response.writeHead(path === "/signed" && problems.length ? 401 : 204).end();
    });
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});

afterEach(async () => {
  await new Promise((r) => http.close(r));
  await closeStore();
  rmSync(dir, { recursive: true, force: true });
});

function dispatcher(options: Partial<DispatcherOptions> & Pick<DispatcherOptions, "notifiers">): AlertDispatcher {
  return new AlertDispatcher({
    store, clock, events: eventsLoggedTo(logs), retryMs: 1_000, uiUrl: "https://idem.example.com",
    env: { SLACK_URL: `${base}${SLACK_PATH}`, PD_KEY: ROUTING_KEY, HOOK_SECRET: SIGNING_SECRET, SMTP_USER: "alerts", SMTP_PASSWORD, PD_URL: `${base}/v2/enqueue` },
    traits: ({ kind, pipelineId }) => ({ severity: kind === "sla_missed" ? "critical" : "error", owner: pipelineId?.startsWith("sales") ? "finance" : null }),
    ...options,
  });
}

function incident(notify: string[], key = "run_failed:sales_daily@2026-09-01:1788328800000", kind: IncidentKind = "run_failed"): NewIncident {
  return {
    key, kind, dataset: null, pipelineId: "sales_daily", businessDate: "2026-09-01", runId: "sales_daily@2026-09-01",
    message: "run sales_daily@2026-09-01 failed: load after 3 tries: the till's file is <late> & partial", notify, at: clock.now(),
  };
}

const undelivered = async () => (await store.dueAlerts(Number.MAX_SAFE_INTEGER, 1000)).length;

describe("notifiers against their real protocols", () => {
  it("posts to a Slack incoming webhook text and blocks with the business date, the cause and a deep link", async () => {
    const d = dispatcher({ notifiers: { slack: { slack: { urlEnv: "SLACK_URL" } } } });
    await store.openIncident(incident(["slack"]));
    expect(await d.deliverDue()).toBe(1);
    expect(received).toHaveLength(1);
    const [{ body, problems }] = received as [(typeof received)[0]];
    expect(problems).toEqual([]);
    expect(body.text).toBe("[ERROR] run failed: sales_daily 2026-09-01: run sales_daily@2026-09-01 failed: load after 3 tries: the till's file is <late> & partial");
    const blocks = JSON.stringify(body.blocks);
    expect(blocks).toContain("the till's file is &lt;late&gt; &amp; partial");
    expect(blocks).toContain("*business date*\\n2026-09-01");
    expect(blocks).toContain("*owner*\\nfinance");
    expect(blocks).toContain("<https://idem.example.com/ui/runs/sales_daily%402026-09-01|Open in idem>");
    expect(await undelivered()).toBe(0);
  });

  it("triggers a PagerDuty alert (Events API v2) and resolves it with the same dedup_key", async () => {
    const d = dispatcher({ notifiers: { pd: { pagerduty: { routingKeyEnv: "PD_KEY", url: `${base}/v2/enqueue` } } } });
    const key = "sla_missed:orders_daily:2026-09-01";
    await store.openIncident({ ...incident(["pd"], key, "sla_missed"), dataset: "orders_daily", runId: null, message: "SLA missed: orders_daily for 2026-09-01 is not published" });
    await d.deliverDue();
    clock.advance(3_600_000);
    await store.resolveIncident(key, clock.now(), "published at 2026-09-02 08:00 UTC");
    await d.deliverDue();
    expect(received.map((r) => r.problems)).toEqual([[], []]);
    const [trigger, resolve] = received.map((r) => r.body);
    expect(trigger).toMatchObject({
      routing_key: ROUTING_KEY, event_action: "trigger", dedup_key: key,
      payload: { summary: "[CRITICAL] SLA missed: orders_daily 2026-09-01: SLA missed: orders_daily for 2026-09-01 is not published", source: "sales_daily", severity: "critical", component: "sales_daily", group: "orders_daily", class: "sla_missed" },
      links: [{ href: "https://idem.example.com/ui/pipelines/sales_daily/grid", text: "Open in idem" }],
    });
    expect(trigger.payload.custom_details).toMatchObject({ business_date: "2026-09-01", owner: "finance" });
    expect(resolve).toEqual({ routing_key: ROUTING_KEY, event_action: "resolve", dedup_key: key });

    // A key longer than PagerDuty takes: the same shortened key for the trigger and its resolve.
    const long = `late_publication:${"d".repeat(240)}:2026-09-01`;
    await store.openIncident({ ...incident(["pd"], long, "late_publication"), dataset: "d".repeat(240) });
    await d.deliverDue();
    await store.resolveIncident(long, clock.now(), "closed");
    await d.deliverDue();
    const [longTrigger, longResolve] = received.slice(2).map((r) => r.body);
    expect(received.slice(2).map((r) => r.problems)).toEqual([[], []]);
    expect(longTrigger.dedup_key).toHaveLength(255);
    expect(longResolve.dedup_key).toBe(longTrigger.dedup_key);
    expect(longTrigger.dedup_key.startsWith(long.slice(0, 190))).toBe(true);
  });

  it("tells a snooze's end: PagerDuty triggers again with the same dedup_key, Slack and a webhook say the snooze ended and the cause is still there", async () => {
    const d = dispatcher({ notifiers: { pd: { pagerduty: { routingKeyEnv: "PD_KEY", url: `${base}/v2/enqueue` } }, slack: { slack: { urlEnv: "SLACK_URL" } }, hook: { webhook: { url: `${base}/hook` } } }, digest: null });
    const key = "sla_missed:orders_daily:2026-09-01";
    await store.openIncident({ ...incident(["pd", "slack", "hook"], key, "sla_missed"), dataset: "orders_daily", runId: null, message: "SLA missed: orders_daily for 2026-09-01 is not published" });
    await d.deliverDue();
    await store.actOnIncident({ key, kind: "acknowledge", actor: "ana", reason: "upstream late", until: clock.now() + 3_600_000, at: clock.now() });
    clock.advance(3_600_000);
    expect(await store.reopenIncident(key, clock.now())).toBe(true);
    received.length = 0;
    expect(await d.deliverDue()).toBe(3);
    expect(received.filter((r) => r.path !== "/hook").map((r) => r.problems)).toEqual([[], []]);
    const by = (path: string) => received.find((r) => r.path === path)!.body;
    expect(by("/v2/enqueue")).toMatchObject({
      event_action: "trigger", dedup_key: key,
      payload: { summary: "[CRITICAL SNOOZE ENDED] SLA missed: orders_daily 2026-09-01: snooze ended: still SLA missed: orders_daily for 2026-09-01 is not published", severity: "critical" },
    });
    expect(by(SLACK_PATH).text).toBe("[CRITICAL SNOOZE ENDED] SLA missed: orders_daily 2026-09-01: snooze ended: still SLA missed: orders_daily for 2026-09-01 is not published");
    expect(by("/hook")).toMatchObject({ event: "reopen", key, message: "snooze ended: still SLA missed: orders_daily for 2026-09-01 is not published" });
  });

  it("signs a webhook with HMAC-SHA256 over timestamp.body, which the receiver verifies; a wrong secret is refused", async () => {
    await store.openIncident(incident(["signed"]));
    expect(await dispatcher({ notifiers: { signed: { webhook: { url: `${base}/signed`, signingSecretEnv: "HOOK_SECRET" } } } }).deliverDue()).toBe(1);
    expect(received[0]!.problems).toEqual([]);
    expect(received[0]!.headers["idem-signature"]).toMatch(new RegExp(`^t=${clock.now() / 1000},v1=[0-9a-f]{64}$`));
    // The same scheme idem itself checks on signed dataset webhooks.
    expect(webhookSignatureFault({ secret: SIGNING_SECRET, header: received[0]!.headers["idem-signature"] as string, body: JSON.stringify(received[0]!.body), now: clock.now(), toleranceMs: 300_000 })).toBeNull();
    expect(received[0]!.body).toMatchObject({ event: "open", kind: "run_failed", severity: "error", owner: "finance", businessDate: "2026-09-01", link: "https://idem.example.com/ui/runs/sales_daily%402026-09-01" });

    await store.openIncident(incident(["signed"], "run_failed:other"));
    const forged = dispatcher({ notifiers: { signed: { webhook: { url: `${base}/signed`, signingSecretEnv: "HOOK_SECRET" } } }, env: { HOOK_SECRET: "not-the-receivers-secret" } });
    expect(await forged.deliverDue()).toBe(0);
    expect(received[1]!.problems).toEqual(["the signature does not match"]);
    const [alert] = await store.pageAlerts({ incidentKey: "run_failed:other", limit: 5 });
    expect(alert).toMatchObject({ state: "failed", lastError: "webhook signed: HTTP 401" });
  });

  it("mails through an SMTP server, with a plain text part, an HTML part and headers, and threads the resolution under the opening", async () => {
    const mails: { from: string; to: string[]; raw: string; user: string | undefined }[] = [];
    const smtp = new SMTPServer({
      disabledCommands: ["STARTTLS"], allowInsecureAuth: true, logger: false,
      onAuth(auth, _session, callback) {
        if (auth.username === "alerts" && auth.password === SMTP_PASSWORD) callback(null, { user: auth.username });
        else callback(new Error("Invalid username or password"));
      },
      onData(stream, session, callback) {
        let raw = "";
        stream.on("data", (d: Buffer) => (raw += d.toString("utf8")));
        stream.on("end", () => {
          mails.push({ from: (session.envelope.mailFrom as { address: string }).address, to: session.envelope.rcptTo.map((r) => r.address), raw, user: session.user as string | undefined });
          callback();
        });
      },
    });
    await new Promise<void>((r) => smtp.listen(0, "127.0.0.1", r));
    try {
      const port = (smtp.server.address() as AddressInfo).port;
      const email = { email: { host: "127.0.0.1", port, userEnv: "SMTP_USER", passwordEnv: "SMTP_PASSWORD", from: "idem <idem@example.com>", to: ["oncall@example.com", "finance@example.com"] } };
      const d = dispatcher({ notifiers: { mail: email } });
      await store.openIncident(incident(["mail"]));
      expect(await d.deliverDue()).toBe(1);
      await store.resolveIncident(incident([]).key, clock.now(), "run sales_daily@2026-09-01 succeeded on a later try");
      expect(await d.deliverDue()).toBe(1);

      expect(mails.map((m) => [m.from, m.to, m.user])).toEqual([
        ["idem@example.com", ["oncall@example.com", "finance@example.com"], "alerts"],
        ["idem@example.com", ["oncall@example.com", "finance@example.com"], "alerts"],
      ]);
      const opening = parseMail(mails[0]!.raw);
      expect(opening.headers["subject"]).toBe("[ERROR] run failed: sales_daily 2026-09-01");
      expect(opening.headers["from"]).toBe("idem <idem@example.com>");
      expect(opening.headers["to"]).toBe("oncall@example.com, finance@example.com");
      expect(opening.headers["x-idem-incident"]).toBe(incident([]).key);
      expect(opening.headers["x-idem-severity"]).toBe("error");
      expect(opening.text).toContain("the till's file is <late> & partial");
      expect(opening.text).toContain("business date: 2026-09-01");
      expect(opening.text).toContain("https://idem.example.com/ui/runs/sales_daily%402026-09-01");
      expect(opening.html).toContain("the till's file is &lt;late&gt; &amp; partial");
      expect(opening.html).toContain('<a href="https://idem.example.com/ui/runs/sales_daily%402026-09-01">Open in idem</a>');
      const resolution = parseMail(mails[1]!.raw);
      expect(resolution.headers["subject"]).toBe("[RESOLVED] run failed: sales_daily 2026-09-01");
      expect(resolution.headers["in-reply-to"]).toBe(opening.headers["message-id"]);
      expect(resolution.text).toContain("resolved: run sales_daily@2026-09-01 succeeded on a later try");

      // A wrong password is the server's refusal, recorded and retried.
      await store.openIncident(incident(["mail"], "run_failed:again"));
      const refused = dispatcher({ notifiers: { mail: email }, env: { SMTP_USER: "alerts", SMTP_PASSWORD: "wrong-password" } });
      expect(await refused.deliverDue()).toBe(0);
      const [alert] = await store.pageAlerts({ incidentKey: "run_failed:again", limit: 5 });
      expect(alert!.lastError).toMatch(/^email mail: SMTP 127\.0\.0\.1: Invalid login/);
    } finally {
      await new Promise<void>((r) => smtp.close(() => r()));
    }
  });
});

describe("alert delivery", () => {
  it("sends a burst as one digest, recorded as delivered for each alert; PagerDuty is still told of each", async () => {
    const d = dispatcher({
      notifiers: { hook: { webhook: { url: `${base}/hook` } }, pd: { pagerduty: { routingKeyEnv: "PD_KEY", url: `${base}/v2/enqueue` } }, log: { log: true } },
      digest: { after: 5, windowMs: 60_000 },
    });
    for (let i = 0; i < 8; i++) await store.openIncident(incident(["hook", "pd", "log"], `did_not_run:sales_daily:2026-08-${String(20 + i)}`, "did_not_run"));
    expect(await d.deliverDue()).toBe(24);
    // The log is never digested: one line per alert, findable by its key.
    expect(logs.filter((l) => l.startsWith("ALERT OPEN did_not_run:sales_daily:2026-08-"))).toHaveLength(8);
    const hooked = received.filter((r) => r.path === "/hook");
    expect(hooked).toHaveLength(1);
    expect(hooked[0]!.body).toMatchObject({ event: "digest", notifier: "hook", count: 8 });
    expect(hooked[0]!.body.alerts.map((a: { key: string }) => a.key)).toEqual(Array.from({ length: 8 }, (_, i) => `did_not_run:sales_daily:2026-08-${20 + i}`));
    expect(received.filter((r) => r.path === "/v2/enqueue")).toHaveLength(8);
    expect(await undelivered()).toBe(0);
    expect((await store.pageAlerts({ limit: 50 })).every((a) => a.state === "sent")).toBe(true);

    // Two more within the window: the budget left (4 of 5 messages) takes them one by one.
    await store.openIncident(incident(["hook"], "late:a", "late"));
    await store.openIncident(incident(["hook"], "late:b", "late"));
    clock.advance(10_000);
    expect(await d.deliverDue()).toBe(2);
    expect(received.filter((r) => r.path === "/hook").map((r) => r.body.event)).toEqual(["digest", "open", "open"]);
  });

  it("opens an incident told to defaultNotify when a notifier keeps failing, and resolves it when that notifier delivers again", async () => {
    failPaths.add(SLACK_PATH);
    const d = dispatcher({
      notifiers: { slack: { slack: { urlEnv: "SLACK_URL" } }, hook: { webhook: { url: `${base}/hook` } } },
      defaultNotify: ["slack", "hook"], failing: { after: 3, forMs: 600_000 },
    });
    await store.openIncident(incident(["slack"]));
    for (const wait of [0, 1_000, 2_000]) {
      clock.advance(wait);
      await d.deliverDue();
    }
    const failing = (await store.listIncidents({ open: true })).find((i) => i.kind === "notifier_failing");
    expect(failing).toMatchObject({ notify: ["hook"], key: `notifier_failing:slack:${Date.parse("2026-09-02T06:00:00Z")}` });
    expect(failing!.message).toBe("notifier slack is failing: 3 deliveries in a row failed since 2026-09-02T06:00:00.000Z; the last: slack slack: HTTP 500 (down for maintenance)");
    await d.deliverDue();
    expect(received.filter((r) => r.path === "/hook").map((r) => `${r.body.event} ${r.body.kind}`)).toEqual(["open notifier_failing"]);

    failPaths.clear();
    clock.advance(4_000);
    await d.deliverDue(); // the run_failed alert reaches Slack at last
    expect(received.filter((r) => r.path === SLACK_PATH)).toHaveLength(1);
    expect((await store.listIncidents({ open: true })).filter((i) => i.kind === "notifier_failing")).toEqual([]);
    await d.deliverDue();
    expect(received.filter((r) => r.path === "/hook").map((r) => `${r.body.event} ${r.body.kind}`)).toEqual(["open notifier_failing", "resolve notifier_failing"]);
    expect(logs.join("\n")).not.toContain(SLACK_PATH);
  });

  it("sends a test message through the real notifier, and names the notifier and the cause when it fails", async () => {
    const d = dispatcher({ notifiers: { slack: { slack: { urlEnv: "SLACK_URL" } }, pd: { pagerduty: { routingKeyEnv: "PD_KEY", url: `${base}/v2/enqueue` } } } });
    expect(await d.sendTest("slack")).toEqual({ kind: "slack" });
    expect(received[0]!.problems).toEqual([]);
    expect(received[0]!.body.text).toMatch(/^\[TEST\] test: a test message from idem to the notifier slack$/);
    expect(await d.sendTest("pd")).toEqual({ kind: "pagerduty" });
    // A test page is resolved at once.
    expect(received.slice(1).map((r) => [r.body.event_action, r.body.dedup_key])).toEqual([["trigger", received[1]!.body.dedup_key], ["resolve", received[1]!.body.dedup_key]]);
    failPaths.add(SLACK_PATH);
    await expect(d.sendTest("slack")).rejects.toThrow(/^slack slack: HTTP 500 \(down for maintenance\)$/);
    await expect(dispatcher({ notifiers: { pd: { pagerduty: { routingKeyEnv: "PD_KEY" } } }, env: {} }).sendTest("pd")).rejects.toThrow(/^pagerduty pd: PD_KEY is not set in the environment$/);
  });
});

/** What Slack's Block Kit documents for the blocks an incoming webhook takes. */
function slackProblems(body: any): string[] {
  const problems: string[] = [];
  if (typeof body.text !== "string" || !body.text) problems.push("text: missing");
  if (!Array.isArray(body.blocks) || body.blocks.length === 0 || body.blocks.length > 50) return [...problems, "blocks: 1 to 50 expected"];
  const textObject = (t: any, where: string, max: number, types = ["plain_text", "mrkdwn"]) => {
    if (!t || !types.includes(t.type) || typeof t.text !== "string" || !t.text || t.text.length > max) problems.push(`${where}: a ${types.join("/")} text of at most ${max} characters expected`);
  };
  body.blocks.forEach((block: any, i: number) => {
    const where = `blocks[${i}]`;
    if (block.type === "header") textObject(block.text, `${where}.text`, 150, ["plain_text"]);
    else if (block.type === "section") {
      if (block.text === undefined && block.fields === undefined) problems.push(`${where}: text or fields expected`);
      if (block.text !== undefined) textObject(block.text, `${where}.text`, 3000);
      if (block.fields !== undefined) {
        if (!Array.isArray(block.fields) || block.fields.length > 10) problems.push(`${where}.fields: at most 10`);
        else block.fields.forEach((f: any, j: number) => textObject(f, `${where}.fields[${j}]`, 2000));
      }
    } else if (block.type === "context") {
      if (!Array.isArray(block.elements) || block.elements.length === 0 || block.elements.length > 10) problems.push(`${where}.elements: 1 to 10`);
      else block.elements.forEach((e: any, j: number) => textObject(e, `${where}.elements[${j}]`, 3000));
    } else problems.push(`${where}: unexpected type ${block.type}`);
  });
  return problems;
}

/** PagerDuty Events API v2: https://developer.pagerduty.com/docs/events-api-v2/trigger-events/ */
function pagerdutyProblems(body: any): string[] {
  const problems: string[] = [];
  if (typeof body.routing_key !== "string" || body.routing_key.length !== 32) problems.push("routing_key: 32 characters expected");
  if (!["trigger", "acknowledge", "resolve"].includes(body.event_action)) problems.push("event_action: trigger, acknowledge or resolve");
  if (body.dedup_key !== undefined && (typeof body.dedup_key !== "string" || body.dedup_key.length > 255)) problems.push("dedup_key: at most 255 characters");
  if (body.event_action !== "trigger") {
    if (typeof body.dedup_key !== "string") problems.push("dedup_key: required to acknowledge or resolve");
    return problems;
  }
  const p = body.payload;
  if (!p || typeof p !== "object") return [...problems, "payload: required"];
  if (typeof p.summary !== "string" || !p.summary || p.summary.length > 1024) problems.push("payload.summary: 1 to 1024 characters");
  if (typeof p.source !== "string" || !p.source) problems.push("payload.source: required");
  if (!["critical", "error", "warning", "info"].includes(p.severity)) problems.push("payload.severity: critical, error, warning or info");
  if (p.timestamp !== undefined && Number.isNaN(Date.parse(p.timestamp))) problems.push("payload.timestamp: ISO 8601 expected");
  return problems;
}

/** What docs/freshness.md tells a receiver to do: recompute, compare in constant time, refuse old timestamps. */
function signatureProblems(raw: string, header: string | string[] | undefined, secret: string, now: number): string[] {
  const match = typeof header === "string" ? /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header) : null;
  if (!match) return ["no signature"];
  const expected = createHmac("sha256", secret).update(`${match[1]}.${raw}`).digest();
  if (!timingSafeEqual(expected, Buffer.from(match[2]!, "hex"))) return ["the signature does not match"];
  if (Math.abs(now / 1000 - Number(match[1])) > 300) return ["the timestamp is more than 5 minutes away"];
  return [];
}

/** Headers (lower-cased, unfolded) and the decoded text/plain and text/html parts of a MIME message. */
function parseMail(raw: string): { headers: Record<string, string>; text: string; html: string } {
  const [head, ...rest] = raw.split(/\r?\n\r?\n/);
  const headers = parseHeaders(head!);
  const boundary = /boundary="?([^";]+)"?/.exec(headers["content-type"] ?? "")?.[1];
  const parts = boundary ? rest.join("\r\n\r\n").split(`--${boundary}`).slice(1, -1) : [rest.join("\r\n\r\n")];
  const decoded: Record<string, string> = {};
  for (const part of parts) {
    const [partHead, ...body] = part.replace(/^\r?\n/, "").split(/\r?\n\r?\n/);
    const h = parseHeaders(partHead!);
    const content = body.join("\r\n\r\n").replace(/\r?\n$/, "");
    const encoding = h["content-transfer-encoding"] ?? "7bit";
    const text =
      encoding === "base64" ? Buffer.from(content.replace(/\s+/g, ""), "base64").toString("utf8")
      : encoding === "quoted-printable" ? Buffer.from(content.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), "latin1").toString("utf8")
      : content;
    decoded[(h["content-type"] ?? "").split(";")[0]!.trim()] = text.replace(/\r\n/g, "\n");
  }
  return { headers, text: decoded["text/plain"] ?? "", html: decoded["text/html"] ?? "" };
}

function parseHeaders(block: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of block.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return headers;
}
