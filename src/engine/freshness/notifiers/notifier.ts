import type { EngineEvents } from "../../events/engine-events.ts";
import type { IncidentKind, Severity } from "../../../core/model/incidents.ts";
import type { AlertEvent } from "../../../store/port.ts";

/**
 * What every notifier is told of one alert: the incident as the store keeps it (the fields a
 * webhook or command has always received), with its severity, owner and a link into the UI.
 */
export interface AlertView {
  /** "reopen": a snooze ended with the incident unresolved. "test": `idem alerts test`, no incident behind it. */
  event: AlertEvent | "test";
  /** The incident's key: PagerDuty's dedup_key, so a resolution resolves the page. */
  key: string;
  kind: IncidentKind | "test";
  severity: Severity;
  owner: string | null;
  pipelineId: string | null;
  dataset: string | null;
  businessDate: string | null;
  runId: string | null;
  /** The cause, in words. */
  message: string;
  resolution: string | null;
  openedAt: number;
  resolvedAt: number | null;
  /** The UI page of its run, pipeline or dataset; null when the config has no `uiUrl`. */
  link: string | null;
  /** The notifier's name in idem.config.ts. */
  notifier: string;
}

export interface NotifierContext {
  /** The notifier's name in idem.config.ts. */
  name: string;
  /** Where variables named by the settings are read, at each send. */
  env: NodeJS.ProcessEnv;
  /** The watchdog's process's events: the `log` notifier's alert is one (`alert:logged`). */
  events: EngineEvents;
  /** Now, on the engine's clock (a signature's timestamp). */
  now: number;
}

/** An environment variable a notifier's settings name; secrets are masked wherever idem writes. */
export interface NotifierVariable {
  name: string;
  /** Where the config names it ("urlEnv"). */
  setting: string;
  secret: boolean;
}

/** One kind of notifier: the file of that kind implements it. */
export interface NotifierKindDefinition<S> {
  variables(settings: S): NotifierVariable[];
  /** Delivers one alert, or throws an Error whose message is the cause alone ("HTTP 503"). */
  send(settings: S, alert: AlertView, context: NotifierContext): Promise<void>;
  /**
   * Delivers many alerts as one message (a burst). Null for a kind that must be told of each
   * alert alone: a PagerDuty page resolves by its own dedup_key only.
   */
  sendDigest: ((settings: S, alerts: readonly AlertView[], context: NotifierContext) => Promise<void>) | null;
}

/** The value of a variable the settings name; its absence is said in one line. */
export function readVariable(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (value === undefined || value === "") throw new Error(`${name} is not set in the environment`);
  return value;
}

/**
 * POSTs a body and throws the cause alone on failure. The URL may be a secret (a Slack webhook
 * is one), so a failure to connect never quotes it; a refusal quotes the peer's first words.
 */
export async function post(url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    throw new Error((error as Error).name === "TimeoutError" ? "timed out" : "could not connect");
  }
  if (response.ok) {
    await response.body?.cancel();
    return;
  }
  const said = (await response.text().catch(() => "")).replace(/\s+/g, " ").trim().slice(0, 200);
  throw new Error(`HTTP ${response.status}${said ? ` (${said})` : ""}`);
}

/** `$NAME` and `${NAME}` inside a setting (a webhook's url and headers). */
const INLINE_VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;

export function inlineVariables(text: string): string[] {
  return [...text.matchAll(INLINE_VARIABLE)].map((m) => (m[1] ?? m[2])!);
}

export function expandInline(text: string, env: NodeJS.ProcessEnv): string {
  return text.replace(INLINE_VARIABLE, (_, braced: string | undefined, bare: string | undefined) => readVariable(env, (braced ?? bare)!));
}
