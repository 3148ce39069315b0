import { createHmac } from "node:crypto";
import type { NotifierSettings } from "../../project/config.ts";
import { expandInline, inlineVariables, post, readVariable, type AlertView, type NotifierContext, type NotifierKindDefinition } from "./notifier.ts";

type Settings = NotifierSettings["webhook"];

/** The header that carries a signed webhook's timestamp and signature. */
export const SIGNATURE_HEADER = "idem-signature";

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, as Stripe signs its webhooks: the
 * timestamp is inside what is signed, so a receiver that refuses old timestamps refuses replays.
 */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  return `t=${unixSeconds},v1=${createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex")}`;
}

/**
 * A JSON POST of the alert (the incident, its severity, owner and link). With
 * `signingSecretEnv`, each request carries an `Idem-Signature` header a receiver verifies.
 */
export const webhookNotifier: NotifierKindDefinition<Settings> = {
  variables: (settings) => [
    ...inlineVariables(settings.url).map((name) => ({ name, setting: "url", secret: true })),
    ...Object.entries(settings.headers ?? {}).flatMap(([header, value]) => inlineVariables(value).map((name) => ({ name, setting: `headers.${header}`, secret: true }))),
    ...(settings.signingSecretEnv ? [{ name: settings.signingSecretEnv, setting: "signingSecretEnv", secret: true }] : []),
  ],
  send: (settings, alert, context) => postSigned(settings, JSON.stringify(alert), context),
  sendDigest: (settings, alerts: readonly AlertView[], context) =>
    postSigned(settings, JSON.stringify({ event: "digest", notifier: context.name, count: alerts.length, alerts }), context),
};

function postSigned(settings: Settings, body: string, { env, now }: NotifierContext): Promise<void> {
  const url = expandInline(settings.url, env);
  const headers = Object.fromEntries(Object.entries(settings.headers ?? {}).map(([k, v]) => [k, expandInline(v, env)]));
  if (settings.signingSecretEnv) headers[SIGNATURE_HEADER] = signatureHeader(readVariable(env, settings.signingSecretEnv), body, Math.floor(now / 1000));
  return post(url, body, headers, settings.timeoutMs ?? 5_000);
}
