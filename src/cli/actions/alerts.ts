import { eventLine } from "../../engine/events/event-lines.ts";
import { printJson } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";

export function testNotifier(cli: Cli, notifier: string, flags: { json?: boolean }) {
  return withEngine(cli, { pipelines: false }, async (engine) => {
    // The `log` notifier's message is this process's event: a person running the test reads it here.
    const stopTelling = engine.events.on("alert:logged", (alert) => console.log(engine.masker.mask(eventLine({ name: "alert:logged", payload: alert }).message)));
    const sent = await engine.testNotifier(notifier).finally(stopTelling);
    if (flags.json) return printJson({ ...sent, sent: true });
    console.log(`sent a test message to ${sent.notifier} (${sent.kind})`);
  });
}
