import type { Command } from "commander";
import { printJson } from "../format.ts";
import { loadProject, type GlobalOptions } from "../project.ts";

export function registerValidateCommand(program: Command): void {
  program
    .command("validate")
    .description("load the config and every pipeline; report every problem, one line each")
    .option("--json", "print as JSON")
    .action(async (options: { json?: boolean }) => {
      const { config, pipelines } = await loadProject(program.opts<GlobalOptions>());
      if (options.json) {
        return printJson(
          pipelines.map((p) => ({ id: p.id, version: p.version, schedule: p.schedule.describe(), tasks: [...p.tasks.keys()], restate: p.restate })),
        );
      }
      console.log(`ok: ${pipelines.length} pipeline(s) in ${config.pipelinePaths.join(", ")}`);
      for (const p of pipelines) {
        console.log(`  ${p.id}  ${p.tasks.size} task(s)  ${p.schedule.describe()}  version ${p.version}`);
        if (p.restate) {
          const out = [...p.tasks.values()].filter((t) => !t.restate).map((t) => t.id);
          console.log(`    restates the last ${p.restate.last} interval(s) after each scheduled one${out.length ? ` (not: ${out.join(", ")})` : ""}; idem next shows the cost`);
        }
      }
    });
}
