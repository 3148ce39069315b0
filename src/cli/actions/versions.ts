import { isoTime, printJson, table } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";

export function versions(cli: Cli, pipelineId: string, flags: { json?: boolean }) {
  return withEngine(cli, { pipelines: false }, async (engine) => {
    const list = await engine.codeVersions(pipelineId);
    if (flags.json) return printJson(list);
    if (list.length === 0) return console.log(`no code versions of ${pipelineId} recorded`);
    console.log(
      table(
        ["version", "recorded", "by", "first ran", "runs", "dates", "file", "packages"],
        list.map((v) => [
          v.codeVersion, isoTime(v.createdAt), v.createdBy ?? "", v.firstRanAt === null ? "never" : isoTime(v.firstRanAt), v.runs,
          v.firstDate === null ? "" : v.firstDate === v.lastDate ? v.firstDate : `${v.firstDate}..${v.lastDate}`,
          v.file, Object.entries(v.packages).map(([name, version]) => `${name}@${version}`).join(" "),
        ]),
      ),
    );
  });
}
