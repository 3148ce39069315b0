import { printJson } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { loadProject } from "../project.ts";

export async function validate(cli: Cli, options: { json?: boolean }) {
  const { config, pipelines } = await loadProject(cli.global);
  if (options.json) {
    return printJson(pipelines.map((p) => ({ id: p.id, version: p.version, schedule: p.schedule.describe(), tasks: [...p.tasks.keys()] })));
  }
  console.log(`ok: ${pipelines.length} pipeline(s) in ${config.pipelinePaths.join(", ")}`);
  for (const p of pipelines) {
    console.log(`  ${p.id}  ${p.tasks.size} task(s)  ${p.schedule.describe()}  version ${p.version}`);
  }
}
