import { describe, expect, it } from "vitest";
import { processHarness } from "../support/processes.ts";

const h = processHarness();

const CONFIG = `import { defineConfig } from "idem";\nexport default defineConfig({ pipelines: "pipelines" });\n`;
const PIPELINES = `
import { pipeline, manual } from "idem";
export const prices = pipeline("daily_prices", { schedule: manual({ timezone: "UTC" }), start: "2026-11-01", triggerOn: ["vendor_prices"] }, {
  load: { run: () => {} },
});
`;

function project() {
  h.create({ "idem.config.ts": CONFIG, "pipelines/all.ts": PIPELINES });
}

describe("idem datasets", () => {
  it("emit records a producer's event once per key: exit 0 both times, the second saying nothing was recorded and what it ignored", () => {
    project();
    const first = h.cli("--user", "ana", "datasets", "emit", "vendor_prices", "--date", "2026-11-04", "--key", "prices-2026-11-04", "--summary", '{"rows":120}');
    expect([first.status, first.stderr, first.stdout]).toEqual([
      0, "", "dataset event 1 recorded: vendor_prices ready for 2026-11-04 (key prices-2026-11-04); pipelines that wait on it take it as a publication\n",
    ]);
    const again = h.cli("--user", "bo", "datasets", "emit", "vendor_prices", "--date", "2026-11-05", "--key", "prices-2026-11-04", "--summary", '{"rows":120}');
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(
      /^nothing recorded: key prices-2026-11-04 of vendor_prices was first used at \S+Z \(event 1, 2026-11-04, by ana via cli\); this call's --date differs from the first and was ignored\n$/,
    );
    const json = JSON.parse(h.cli("datasets", "emit", "vendor_prices", "--date", "2026-11-04", "--key", "prices-2026-11-04", "--json").stdout);
    expect(json).toMatchObject({ created: false, ignored: ["summary"], audit: null, event: { id: 1, source: "cli", actor: "ana", summary: '{"rows":120}' } });

    const events = h.cli("datasets", "events", "vendor_prices");
    expect(events.status).toBe(0);
    expect(events.stdout).toContain("cli by ana, key prices-2026-11-04");
    expect(events.stdout.trim().split("\n")).toHaveLength(2); // the header and one event
    const list = JSON.parse(h.cli("datasets", "list", "--json").stdout);
    expect(list).toEqual([{ name: "vendor_prices", producedBy: [], publishedBy: [], triggers: ["daily_prices"], promisedBy: [] }]);
    const audit = JSON.parse(h.cli("audit", "--json").stdout);
    expect(audit.filter((a: { action: string }) => a.action === "dataset-event").map((a: { actor: string; details: unknown }) => [a.actor, a.details])).toEqual([
      ["ana", { dataset: "vendor_prices", businessDate: "2026-11-04", source: "cli", idempotencyKey: "prices-2026-11-04" }],
    ]);
  });

  it("emit refuses bad input with exit 2 and one line naming the flag, and records nothing", () => {
    project();
    const refused = (args: string[], line: string | RegExp) => {
      const result = h.cli("datasets", "emit", ...args);
      expect([result.status, result.stdout], args.join(" ")).toEqual([2, ""]);
      if (typeof line === "string") expect(result.stderr).toBe(`idem: ${line}\n`);
      else expect(result.stderr).toMatch(line);
    };
    refused(["vendor_pricez", "--date", "2026-11-04", "--key", "k"], 'unknown dataset "vendor_pricez": no pipeline produces, publishes, waits on or promises it (known: vendor_prices)');
    refused(["vendor_prices", "--date", "2026-11-31", "--key", "k"], '--date: bad date "2026-11-31": not a calendar date (expected YYYY-MM-DD)');
    refused(["vendor_prices", "--date", "2026-11-04", "--key", "k".repeat(256)], "--key: 256 characters; at most 255");
    refused(["vendor_prices", "--date", "2026-11-04", "--key", "a\tb"], "--key: control character U+0009 at position 2");
    refused(["vendor_prices", "--date", "2026-11-04", "--key", "k", "--summary", "{rows: 1}"], /^idem: --summary: not JSON: [^\n]+\n$/);
    const missing = h.cli("datasets", "emit", "vendor_prices", "--date", "2026-11-04");
    expect([missing.status, missing.stderr]).toEqual([2, expect.stringContaining("required option '--key <key>' not specified")]);
    expect(h.cli("datasets", "events").stdout).toBe("no dataset event yet\n");
  });
});
