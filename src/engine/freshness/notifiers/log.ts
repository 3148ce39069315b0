import type { NotifierSettings } from "../../project/config.ts";
import type { NotifierKindDefinition } from "./notifier.ts";

const EVENT = { open: "OPEN", resolve: "RESOLVED", test: "TEST" } as const;

/** The watchdog's process log: one line per alert. */
export const logNotifier: NotifierKindDefinition<NotifierSettings["log"]> = {
  variables: () => [],
  async send(_settings, alert, { log }) {
    log(`ALERT ${EVENT[alert.event]} ${alert.key}: ${alert.message}`);
  },
  async sendDigest(_settings, alerts, { log }) {
    log(`ALERT DIGEST of ${alerts.length}: ${alerts.map((a) => `${EVENT[a.event]} ${a.key}: ${a.message}`).join(" | ")}`);
  },
};
