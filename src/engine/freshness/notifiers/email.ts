import { createHash } from "node:crypto";
import type { NotifierSettings } from "../../project/config.ts";
import { causeOf, digestSubject, factsOf, plainText, subjectOf } from "./message.ts";
import { readVariable, type AlertView, type NotifierContext, type NotifierKindDefinition } from "./notifier.ts";

type Settings = NotifierSettings["email"];

interface Mail {
  subject: string;
  text: string;
  html: string;
  headers: Record<string, string>;
  messageId?: string;
  inReplyTo?: string;
}

/**
 * Mail through an SMTP server (nodemailer, imported only when a mail is sent): a plain text
 * part and an HTML part. A resolution answers the opening's mail (In-Reply-To), so a mail
 * client threads them.
 */
export const emailNotifier: NotifierKindDefinition<Settings> = {
  variables: (settings) => [
    ...(settings.userEnv ? [{ name: settings.userEnv, setting: "userEnv", secret: false }] : []),
    ...(settings.passwordEnv ? [{ name: settings.passwordEnv, setting: "passwordEnv", secret: true }] : []),
  ],
  send: (settings, alert, context) => {
    const domain = settings.from.split("@").pop()!.replace(/>.*$/, "");
    const thread = `<${createHash("sha256").update(alert.key).digest("hex").slice(0, 32)}.open@${domain}>`;
    return sendMail(settings, {
      subject: subjectOf(alert),
      text: plainText(alert),
      html: alertHtml(alert),
      headers: { "X-Idem-Incident": alert.key, "X-Idem-Event": alert.event, "X-Idem-Severity": alert.severity },
      ...threading(alert, thread),
    }, context);
  },
  sendDigest: (settings, alerts, context) =>
    sendMail(settings, {
      subject: digestSubject(alerts),
      text: alerts.map(plainText).join("\n\n----\n\n"),
      html: `<h2>${escapeHtml(digestSubject(alerts))}</h2>${alerts.map(alertHtml).join("<hr>")}`,
      headers: { "X-Idem-Event": "digest", "X-Idem-Incident": alerts.map((a) => a.key).join(" ") },
    }, context),
};

async function sendMail(settings: Settings, mail: Mail, { env }: NotifierContext): Promise<void> {
  const user = settings.userEnv ? readVariable(env, settings.userEnv) : undefined;
  const pass = settings.passwordEnv ? readVariable(env, settings.passwordEnv) : undefined;
  const { createTransport } = (await import("nodemailer")).default;
  const timeoutMs = settings.timeoutMs ?? 10_000;
  const transport = createTransport({
    host: settings.host,
    port: settings.port ?? (settings.secure ? 465 : 587),
    secure: settings.secure ?? false,
    ...(user !== undefined || pass !== undefined ? { auth: { user: user ?? "", pass: pass ?? "" } } : {}),
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  });
  try {
    await transport.sendMail({ from: settings.from, to: [...settings.to], ...mail });
  } catch (error) {
    throw new Error(`SMTP ${settings.host}: ${(error as Error).message.split("\n")[0]}`);
  } finally {
    transport.close();
  }
}

/** An opening starts the thread; what follows it (a snooze's end, the resolution) answers it. */
function threading(alert: AlertView, thread: string): Pick<Mail, "messageId" | "inReplyTo"> {
  switch (alert.event) {
    case "open": return { messageId: thread };
    case "reopen":
    case "resolve":
      return { inReplyTo: thread };
    case "test": return {};
  }
}

function alertHtml(alert: AlertView): string {
  const rows = factsOf(alert).map(([label, value]) => `<tr><th align="left">${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`).join("");
  return [
    `<h3>${escapeHtml(subjectOf(alert))}</h3>`,
    `<p>${escapeHtml(causeOf(alert)).replace(/\n/g, "<br>")}</p>`,
    `<table>${rows}</table>`,
    alert.link ? `<p><a href="${escapeHtml(alert.link)}">Open in idem</a></p>` : "",
  ].join("\n");
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
