import type { NotifierSettings } from "../../project/config.ts";
import type { NotifierKindDefinition } from "./notifier.ts";
import { causeOf } from "./message.ts";

import type { AlertView } from "./notifier.ts";

const EVENT: Record<AlertView["event"], string> = { open: "OPEN", reopen: "SNOOZE ENDED", resolve: "RESOLVED", test: "TEST" };

/**
 * The watchdog's process log: one line per alert. Never digested: a log line disturbs no one,
 * and one line per alert stays findable by its key.
 */
export const logNotifier: NotifierKindDefinition<NotifierSettings["log"]> = {
  variables: () => [],
  async send(_settings, alert, { events }) {
    events.emit("alert:logged", { event: EVENT[alert.event], key: alert.key, cause: causeOf(alert).split("\n")[0]! });
  },
  sendDigest: null,
};
