import { describe, expect, it } from "vitest";
import { openProject } from "../../src/engine/compose.ts";
import { loadConfig } from "../../src/engine/project/config.ts";
import { processHarness } from "../support/processes.ts";

const h = processHarness();

const CONFIG = `import { defineConfig } from "idem";\nexport default defineConfig({ pipelines: "pipelines" });\n`;
const KEY = "sla_missed:orders_daily:2026-09-01";

/** A project whose state holds one open SLA missed incident, told to the "log" notifier. */
async function project(): Promise<void> {
  h.create({ "idem.config.ts": CONFIG, "pipelines/none.ts": "export {};\n" });
  const engine = await openProject(await loadConfig(h.project), { pipelines: false });
  try {
    await engine.store.openIncident({
      key: KEY, kind: "sla_missed", dataset: "orders_daily", pipelineId: "shop_orders", businessDate: "2026-09-01", runId: null,
      message: "SLA missed: orders_daily for 2026-09-01 is not published", notify: ["log"], at: Date.now(),
    });
  } finally {
    await engine.close();
  }
}

describe("idem incidents", () => {
  it("acknowledges, snoozes and resolves an incident with a reason, each audited with its actor", async () => {
    await project();
    expect(h.cli("incidents").stdout).toMatch(new RegExp(`${KEY}\\s+open\\s+SLA missed`));

    const ack = h.cli("--user", "ana", "incidents", "ack", KEY, "--reason", "upstream file late");
    expect([ack.status, ack.stdout, ack.stderr]).toEqual([0, `${KEY}: acknowledged by ana (upstream file late)\n`, ""]);
    const snooze = h.cli("--user", "bo", "incidents", "snooze", KEY, "--for", "2h", "--reason", "vendor says 10:00");
    expect(snooze.stdout).toMatch(new RegExp(`^${KEY}: acknowledged by bo until \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ \\(vendor says 10:00\\)\\n$`));
    const resolve = h.cli("--user", "ana", "incidents", "resolve", KEY, "--reason", "loaded by hand");
    expect(resolve.stdout).toMatch(new RegExp(`^${KEY}: resolved \\S+ by ana \\(loaded by hand\\)\\n$`));
    expect(h.cli("incidents").stdout).toBe("no open incidents\n");

    const audit = JSON.parse(h.cli("audit", "--json").stdout) as { actor: string; action: string; reason: string }[];
    expect(audit.map((e) => `${e.actor} ${e.action} ${e.reason}`)).toEqual([
      "ana incident-resolve loaded by hand", "bo incident-snooze vendor says 10:00", "ana incident-acknowledge upstream file late",
      "watchdog incident-open SLA missed: orders_daily for 2026-09-01 is not published",
    ]);
    const listed = JSON.parse(h.cli("incidents", "--all", "--json").stdout);
    expect(listed[0]).toMatchObject({ key: KEY, state: "resolved", resolvedBy: "ana", acknowledgement: { by: "bo", reason: "vendor says 10:00" } });
  });

  it("refuses in one line, exit 2: no reason, no snooze length, an unknown key, a resolved incident", async () => {
    await project();
    const cases: [string[], string][] = [
      [["incidents", "ack", KEY], `idem: give --reason "...": every change to an incident is audited\n`],
      [["incidents", "snooze", KEY, "--reason", "r"], "idem: give --for <duration> or --until <instant>: how long to snooze\n"],
      [["incidents", "snooze", KEY, "--for", "soon", "--reason", "r"], `idem: --for: bad duration "soon" (expected e.g. 500ms, 30s, 5m, 1h30m, 2d)\n`],
      [["incidents", "snooze", KEY, "--until", "2020-01-01", "--reason", "r"], `idem: --until must be in the future to snooze incident ${KEY}\n`],
      [["incidents", "snooze", KEY, "--for", "0s", "--reason", "r"], `idem: --for must be a positive duration to snooze incident ${KEY}\n`],
      [["incidents", "resolve", "nope:1", "--reason", "r"], "idem: unknown incident nope:1\n"],
    ];
    for (const [args, stderr] of cases) {
      const result = h.cli(...args);
      expect([args.join(" "), result.status, result.stderr]).toEqual([args.join(" "), 2, stderr]);
    }
    h.cli("incidents", "resolve", KEY, "--reason", "done");
    const again = h.cli("--user", "bo", "incidents", "ack", KEY, "--reason", "late to the party");
    expect([again.status, again.stderr]).toEqual([2, `idem: incident ${KEY} was resolved by ${process.env.IDEM_USER ?? (await import("node:os")).userInfo().username}; there is nothing to acknowledge\n`]);
  });
});
