import { UsageError } from "../../core/model/errors.ts";
import { isoTime, printJson, table } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";

export function list(cli: Cli, pipelineId: string | undefined, flags: { json?: boolean }) {
  return withEngine(cli, { pipelines: false }, async (engine) => {
    const watermarks = await engine.watermarks(pipelineId);
    if (flags.json) return printJson(watermarks);
    if (watermarks.length === 0) return console.log(pipelineId ? `no watermarks saved for ${pipelineId}` : "no watermarks saved");
    console.log(table(["pipeline", "key", "value", "updated"], watermarks.map((w) => [w.pipelineId, w.taskId, w.value, isoTime(w.updatedAt)])));
  });
}

export function set(cli: Cli, pipelineId: string, key: string, value: string, flags: { reason?: string }) {
  if (!flags.reason?.trim()) throw new UsageError('give --reason "...": setting a watermark by hand is audited');
  const reason = flags.reason;
  return withEngine(cli, { pipelines: true }, async (engine, actor) => {
    const result = await engine.setWatermark(pipelineId, key, value, { reason, actor });
    console.log(`watermark ${pipelineId} ${key}: ${result.previous === null ? "(none)" : JSON.stringify(result.previous)} -> ${JSON.stringify(result.value)}`);
  });
}
