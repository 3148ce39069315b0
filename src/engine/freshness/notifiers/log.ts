import type { NotifierSettings } from "../../project/config.ts";
import type { NotifierKindDefinition } from "./notifier.ts";

const EVENT = { open: "OPEN", resolve: "RESOLVED", test: "TEST" } as const;

/**
 * The watchdog's process log: one line per alert. Never digested: a log line disturbs no one,
 * and one line per alert stays findable by its key.
 */
export const logNotifier: NotifierKindDefinition<NotifierSettings["log"]> = {
  variables: () => [],
  async send(_settings, alert, { log }) {
    log(`ALERT ${EVENT[alert.event]} ${alert.key}: ${alert.message}`);
  },
  sendDigest: null,
};
