import { printJson } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";

export function testNotifier(cli: Cli, notifier: string, flags: { json?: boolean }) {
  return withEngine(cli, { pipelines: false }, async (engine) => {
    const sent = await engine.testNotifier(notifier, (line) => console.log(line));
    if (flags.json) return printJson({ ...sent, sent: true });
    console.log(`sent a test message to ${sent.notifier} (${sent.kind})`);
  });
}
