import { createHash } from "node:crypto";
import type { NotifierSettings } from "../../project/config.ts";
import { lineOf } from "./message.ts";
import { post, readVariable, type AlertView, type NotifierContext, type NotifierKindDefinition } from "./notifier.ts";

type Settings = NotifierSettings["pagerduty"];

export const PAGERDUTY_EVENTS_URL = "https://events.pagerduty.com/v2/enqueue";

/**
 * PagerDuty's Events API v2: an opening triggers an alert and a resolution resolves it, both
 * with `dedup_key` = the incident's key, so PagerDuty joins them (and a retried trigger is one
 * alert); the end of a snooze triggers again with the same key. Never digested: each page must
 * resolve by its own key.
 */
export const pagerdutyNotifier: NotifierKindDefinition<Settings> = {
  variables: (settings) => [{ name: settings.routingKeyEnv, setting: "routingKeyEnv", secret: true }],
  async send(settings, alert, context) {
    switch (alert.event) {
      case "open":
      case "reopen":
        return enqueue(settings, trigger(settings, alert), context);
      case "resolve":
        return enqueue(settings, { event_action: "resolve", dedup_key: dedupKey(alert.key) }, context);
      case "test":
        await enqueue(settings, trigger(settings, alert), context);
        // A test must not leave a page open.
        return enqueue(settings, { event_action: "resolve", dedup_key: dedupKey(alert.key) }, context);
    }
  },
  sendDigest: null,
};

function trigger(settings: Settings, alert: AlertView): Record<string, unknown> {
  return {
    event_action: "trigger",
    dedup_key: dedupKey(alert.key),
    payload: {
      summary: lineOf(alert).slice(0, 1024),
      source: settings.source ?? alert.pipelineId ?? alert.dataset ?? "idem",
      severity: alert.severity,
      timestamp: new Date(alert.openedAt).toISOString(),
      ...(alert.pipelineId ? { component: alert.pipelineId } : {}),
      ...(alert.dataset ? { group: alert.dataset } : {}),
      class: alert.kind,
      custom_details: {
        business_date: alert.businessDate, run: alert.runId, owner: alert.owner, cause: alert.message, incident: alert.key,
      },
    },
    ...(alert.link ? { links: [{ href: alert.link, text: "Open in idem" }] } : {}),
    client: "idem",
  };
}

/** PagerDuty takes at most 255 characters; a longer key keeps its head and a hash of the whole, the same for trigger and resolve. */
export function dedupKey(key: string): string {
  return key.length <= 255 ? key : `${key.slice(0, 190)}:${createHash("sha256").update(key).digest("hex")}`;
}

function enqueue(settings: Settings, event: Record<string, unknown>, { env }: NotifierContext): Promise<void> {
  const body = { routing_key: readVariable(env, settings.routingKeyEnv), ...event };
  return post(settings.url ?? PAGERDUTY_EVENTS_URL, JSON.stringify(body), {}, settings.timeoutMs ?? 10_000);
}
