import { isoTime, printJson, table } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";

interface VersionsFlags {
  json?: boolean;
  collect?: boolean;
  keepNewest?: number;
  keepDays?: number;
  reason?: string;
}

export function versions(cli: Cli, pipelineId: string, flags: VersionsFlags) {
  return withEngine(cli, { pipelines: false }, async (engine, actor) => {
    if (flags.collect) {
      const done = await engine.collectBundles(pipelineId, { actor, reason: flags.reason, retention: retentionOf(flags) });
      if (flags.json) return printJson(done);
      console.log(done.collected.length === 0 ? `no bundle of ${pipelineId} to collect` : `collected ${done.collected.length} bundle(s) of ${pipelineId}: ${done.collected.join(" ")}`);
      if (done.needed.length > 0) console.log(`kept, a run needs them: ${done.needed.join(" ")}`);
      return;
    }
    const list = await engine.codeVersions(pipelineId);
    if (flags.json) return printJson(list);
    if (list.length === 0) return console.log(`no code versions of ${pipelineId} recorded`);
    console.log(
      table(
        ["version", "recorded", "by", "first ran", "runs", "dates", "file", "packages"],
        list.map((v) => [
          v.collectedAt === null ? v.codeVersion : `${v.codeVersion} (collected)`, isoTime(v.createdAt), v.createdBy ?? "", v.firstRanAt === null ? "never" : isoTime(v.firstRanAt), v.runs,
          v.firstDate === null ? "" : v.firstDate === v.lastDate ? v.firstDate : `${v.firstDate}..${v.lastDate}`,
          v.file, Object.entries(v.packages).map(([name, version]) => `${name}@${version}`).join(" "),
        ]),
      ),
    );
  });
}

/** Only the flags given: the engine's defaults (core/policy/bundle-retention.ts) fill the rest. */
function retentionOf(flags: VersionsFlags): { keepNewest?: number; keepDays?: number } {
  return { ...(flags.keepNewest === undefined ? {} : { keepNewest: flags.keepNewest }), ...(flags.keepDays === undefined ? {} : { keepDays: flags.keepDays }) };
}
