import type { NotifierConfig, NotifierKind, NotifierSettings } from "../../project/config.ts";
import { commandNotifier } from "./command.ts";
import { emailNotifier } from "./email.ts";
import { logNotifier } from "./log.ts";
import type { NotifierKindDefinition, NotifierVariable } from "./notifier.ts";
import { pagerdutyNotifier } from "./pagerduty.ts";
import { slackNotifier } from "./slack.ts";
import { webhookNotifier } from "./webhook.ts";

/** Every kind of notifier, one file each: a kind added to `NotifierSettings` and missing here does not compile. */
const KINDS: { [K in NotifierKind]: NotifierKindDefinition<NotifierSettings[K]> } = {
  log: logNotifier,
  command: commandNotifier,
  webhook: webhookNotifier,
  slack: slackNotifier,
  email: emailNotifier,
  pagerduty: pagerdutyNotifier,
};

const KIND_NAMES = Object.keys(KINDS) as NotifierKind[];

/** A checked notifier's kind and settings, with the definition that handles them. */
export interface ResolvedNotifier {
  kind: NotifierKind;
  settings: unknown;
  definition: NotifierKindDefinition<unknown>;
}

export function resolveNotifier(config: NotifierConfig): ResolvedNotifier {
  const kind = KIND_NAMES.find((k) => k in config);
  if (kind === undefined) throw new Error(`a notifier names one of ${KIND_NAMES.join(", ")}`);
  return { kind, settings: (config as Record<NotifierKind, unknown>)[kind], definition: KINDS[kind] as NotifierKindDefinition<unknown> };
}

/** The environment variables a notifier's settings name. */
export function notifierVariables(config: NotifierConfig): NotifierVariable[] {
  const { settings, definition } = resolveNotifier(config);
  return definition.variables(settings);
}

/** The variables whose values are secrets, for the masker. */
export function notifierSecretNames(notifiers: Readonly<Record<string, NotifierConfig>>): string[] {
  return Object.values(notifiers).flatMap((config) => notifierVariables(config).filter((v) => v.secret).map((v) => v.name));
}

/** The first variable a notifier names that the environment lacks, as one line; null when all are set. */
export function missingNotifierVariable(notifiers: Readonly<Record<string, NotifierConfig>>, env: NodeJS.ProcessEnv): string | null {
  for (const [name, config] of Object.entries(notifiers)) {
    const { kind } = resolveNotifier(config);
    for (const variable of notifierVariables(config)) {
      if (env[variable.name] === undefined || env[variable.name] === "") {
        return `notifiers.${name}.${kind}.${variable.setting}: ${variable.name} is not set in the environment`;
      }
    }
  }
  return null;
}
