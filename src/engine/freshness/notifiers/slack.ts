import type { NotifierSettings } from "../../project/config.ts";
import { causeOf, digestSubject, factsOf, lineOf, subjectOf } from "./message.ts";
import { post, readVariable, type AlertView, type NotifierContext, type NotifierKindDefinition } from "./notifier.ts";

type Settings = NotifierSettings["slack"];

/** Slack's limits (Block Kit): a header's text, a section's text, a field, fields per section, blocks per message. */
const LIMIT = { header: 150, section: 3000, field: 2000, fields: 10, blocks: 50 };
/** A digest lists this many alerts in blocks; the rest are counted. */
const DIGEST_ENTRIES = LIMIT.blocks - 3;

/**
 * A Slack incoming webhook (its URL, a secret, in the variable `urlEnv` names): `text` for
 * notifications and `blocks` with the cause, the business date and a link into the UI.
 */
export const slackNotifier: NotifierKindDefinition<Settings> = {
  variables: (settings) => [{ name: settings.urlEnv, setting: "urlEnv", secret: true }],
  send: (settings, alert, context) => postMessage(settings, { text: lineOf(alert).slice(0, LIMIT.section), blocks: alertBlocks(alert) }, context),
  sendDigest: (settings, alerts, context) => postMessage(settings, digestMessage(alerts), context),
};

function postMessage(settings: Settings, message: { text: string; blocks: unknown[] }, { env }: NotifierContext): Promise<void> {
  return post(readVariable(env, settings.urlEnv), JSON.stringify(message), {}, settings.timeoutMs ?? 5_000);
}

function alertBlocks(alert: AlertView): unknown[] {
  const facts = factsOf(alert).filter(([label]) => label !== "opened" && label !== "resolved" && label !== "incident");
  return [
    { type: "header", text: { type: "plain_text", text: cut(subjectOf(alert), LIMIT.header) } },
    { type: "section", text: { type: "mrkdwn", text: cut(escape(causeOf(alert)), LIMIT.section) } },
    ...(facts.length ? [{ type: "section", fields: facts.slice(0, LIMIT.fields).map(([label, value]) => ({ type: "mrkdwn", text: cut(`*${label}*\n${escape(value)}`, LIMIT.field) })) }] : []),
    { type: "context", elements: [{ type: "mrkdwn", text: cut(`${alert.link ? `<${alert.link}|Open in idem>  ·  ` : ""}incident \`${escape(alert.key)}\``, LIMIT.section) }] },
  ];
}

function digestMessage(alerts: readonly AlertView[]): { text: string; blocks: unknown[] } {
  const listed = alerts.slice(0, DIGEST_ENTRIES);
  const blocks: unknown[] = [
    { type: "header", text: { type: "plain_text", text: cut(digestSubject(alerts), LIMIT.header) } },
    ...listed.map((alert) => ({
      type: "section",
      text: { type: "mrkdwn", text: cut(`*${escape(subjectOf(alert))}*\n${escape(causeOf(alert).split("\n")[0]!)}${alert.link ? `\n<${alert.link}|Open in idem>` : ""}`, LIMIT.section) },
    })),
  ];
  if (alerts.length > listed.length) blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: `and ${alerts.length - listed.length} more: see idem incidents` }] });
  return { text: cut([digestSubject(alerts), ...alerts.map(lineOf)].join("\n"), LIMIT.section), blocks };
}

/** Slack's mrkdwn reads &, < and > as markup: they are sent as entities. */
function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
