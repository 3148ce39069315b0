import type { Command } from "commander";
import { lazy } from "../lazy.ts";

const actions = () => import("../actions/alerts.ts");

/** `idem alerts test <notifier>`: is the notifier reachable, as an alert would reach it? */
export function registerAlertsCommands(program: Command): void {
  const alerts = program.command("alerts").description("the notifiers that alerts go to");
  alerts
    .command("test <notifier>")
    .description("send a test message through a notifier of idem.config.ts and print the outcome; exit 1 when it fails")
    .option("--json", "print as JSON")
    .action(lazy(actions, "testNotifier"));
}
