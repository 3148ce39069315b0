import { isoTime, printJson, table } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";

export function frozen(cli: Cli, pipelineId: string, flags: { limit: number; json?: boolean }) {
  return withEngine(cli, { pipelines: true }, async (engine) => {
    const report = await engine.frozenReport(pipelineId, flags.limit);
    if (flags.json) return printJson(report);
    console.log(
      report.periods.length === 0
        ? `${pipelineId}: no frozen periods`
        : table(["from", "to", "owner", "reason", "declared in"], report.periods.map((p) => [p.from, p.to, p.owner, p.reason, p.declaredIn === "pipeline" ? pipelineId : "idem.config.ts"])),
    );
    if (report.changes.length === 0) return;
    console.log("\nchanges, newest first:");
    for (const e of report.changes) console.log(`${isoTime(e.at)} (seen by ${e.actor}) ${e.reason}`);
  });
}
