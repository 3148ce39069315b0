import { formatInstant } from "../../core/time/dates.ts";
import type { Health } from "../../engine/health.ts";
import type { HealthStatus } from "../../core/policy/installation-health.ts";
import { fullHealth } from "../../http/health-body.ts";
import { isoTime, printJson, table } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";
import { testClock } from "../test-clock.ts";

const RED = (s: string) => (process.stdout.isTTY ? `\x1b[31;1m${s}\x1b[0m` : s);
const MARK: Record<string, string> = { on_time: "ok", late: "LATE", missed: "MISSED", not_yet_due: "." };

export function freshness(cli: Cli, flags: { json?: boolean }) {
  return withEngine(cli, { pipelines: true }, async (engine) => {
    const report = await engine.freshness();
    if (flags.json) return printJson(report);
    console.log(healthLine(await engine.installationHealth()));
    if (report.datasets.length === 0) return console.log("no freshness promises (add `promises` to a pipeline)");
    console.log(
      table(
        ["dataset", "newest", "published", "due", "status", "deadline", "last 7 days (oldest first)"],
        report.datasets.map((d) => [
          d.dataset,
          d.newest?.businessDate,
          d.newest ? formatInstant(d.newest.publishedAt, d.timezone) : null,
          d.due?.businessDate,
          d.due ? (d.due.status === "on_time" ? "on time" : d.due.status === "missed" ? RED("missed") : d.due.status.replace(/_/g, " ")) : "not yet due",
          `${d.deadline}${d.slo ? ` (slo ${d.slo})` : ""} ${d.timezone}`,
          d.days.map((day) => MARK[day.status]).join(" "),
        ]),
      ),
    );
    if (report.openIncidents.length) {
      const open = report.openIncidents.filter((i) => i.state === "open").length;
      console.log(`\n${open} open incident(s)${open < report.openIncidents.length ? `, ${report.openIncidents.length - open} acknowledged` : ""}:`);
      for (const i of report.openIncidents) {
        const ack = i.state === "acknowledged" && i.acknowledgement ? ` [acknowledged by ${i.acknowledgement.by}]` : "";
        console.log(`  ${isoTime(i.openedAt)}  ${i.message}${ack}`);
      }
    }
  });
}

// Health loads the pipeline files: a file that does not load is part of the answer. Under IDEM_NOW
// it answers as of that instant, as a daemon's /health under the same clock would.
export function health(cli: Cli, flags: { json?: boolean }) {
  return withEngine(cli, { pipelines: true, clock: testClock(undefined, "fixed") }, async (engine) => {
    const health = await engine.installationHealth();
    if (flags.json) printJson(fullHealth(health));
    else {
      console.log(healthLine(health));
      for (const broken of health.brokenFiles) console.log(RED(`BROKEN PIPELINE FILE: ${broken.message}`));
    }
    if (!health.healthy) process.exitCode = 1;
  });
}

/** How a terminal names each of the engine's health verdicts when it is not healthy. */
const PROBLEM: Record<HealthStatus, string> = {
  ok: "OK", unreachable: "STATE STORE UNREACHABLE", none: "CHECKER DOWN", stale: "CHECKER DOWN", no_scheduler: "SCHEDULER DOWN", degraded: "DEGRADED",
};

function healthLine(health: Health): string {
  return health.healthy ? health.message : RED(`${PROBLEM[health.status]}: ${health.message}`);
}
