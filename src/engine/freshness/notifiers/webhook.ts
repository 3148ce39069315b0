import type { NotifierSettings } from "../../project/config.ts";
import { SIGNATURE_HEADER, signWebhook } from "../../signing/webhook-signature.ts";
import { receivedOf } from "./message.ts";
import { expandInline, inlineVariables, post, readVariable, type AlertView, type NotifierContext, type NotifierKindDefinition } from "./notifier.ts";

type Settings = NotifierSettings["webhook"];

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
  send: (settings, alert, context) => postSigned(settings, JSON.stringify(receivedOf(alert)), context),
  sendDigest: (settings, alerts: readonly AlertView[], context) =>
    postSigned(settings, JSON.stringify({ event: "digest", notifier: context.name, count: alerts.length, alerts: alerts.map(receivedOf) }), context),
};

function postSigned(settings: Settings, body: string, { env, now }: NotifierContext): Promise<void> {
  const url = expandInline(settings.url, env);
  const headers = Object.fromEntries(Object.entries(settings.headers ?? {}).map(([k, v]) => [k, expandInline(v, env)]));
  if (settings.signingSecretEnv) headers[SIGNATURE_HEADER] = signWebhook(readVariable(env, settings.signingSecretEnv), Math.floor(now / 1000), body);
  return post(url, body, headers, settings.timeoutMs ?? 5_000);
}
