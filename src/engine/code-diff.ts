import { readFileSync } from "node:fs";
import { join } from "node:path";
import { NotFoundError, UsageError } from "../core/model/errors.ts";
import { graphDiff, type GraphDiff } from "../core/pipeline/graph-diff.ts";
import { unifiedDiff } from "../core/text/unified-diff.ts";
import type { CodeVersionUse, Store } from "../store/port.ts";

export interface CodeDiff {
  pipelineId: string;
  from: string;
  to: string;
  graph: GraphDiff;
  /** One unified diff per source file that differs (files only in one version diff against nothing). */
  sources: { file: string; diff: string }[];
}

/**
 * The graph and source differences between two code versions of a pipeline
 * (`idem versions <pipeline> --diff <a> <b>`). The graphs come from the recorded definitions; the
 * sources from each bundle's inline source map, which carries every local file it was built from.
 */
export async function codeDiff(store: Store, pipelineId: string, a: string, b: string): Promise<CodeDiff> {
  const versions = await store.listCodeVersions(pipelineId);
  const from = pickCodeVersion(versions, pipelineId, a);
  const to = pickCodeVersion(versions, pipelineId, b);
  const graphOf = async (v: typeof from) => (await store.getPipelineVersion(pipelineId, v.graphVersion))?.definition ?? {};
  const before = sourcesOf(pipelineId, from);
  const after = sourcesOf(pipelineId, to);
  const files = [...new Set([...before.keys(), ...after.keys()])].sort();
  return {
    pipelineId, from: from.codeVersion, to: to.codeVersion,
    graph: graphDiff(await graphOf(from), await graphOf(to)),
    sources: files
      .map((file) => ({ file, diff: unifiedDiff(before.get(file) ?? "", after.get(file) ?? "", { from: `${from.codeVersion}/${file}`, to: `${to.codeVersion}/${file}` }) }))
      .filter((f) => f.diff !== ""),
  };
}

/** The one version of `versions` that `given` names, in full or by a prefix that names one. */
export function pickCodeVersion(versions: readonly CodeVersionUse[], pipelineId: string, given: string): CodeVersionUse {
  const matches = given === "" ? [] : versions.filter((v) => v.codeVersion.startsWith(given));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new NotFoundError("codeVersion", `pipeline ${pipelineId} has no code version ${given} (idem versions ${pipelineId} lists them)`);
  throw new UsageError(`code version ${given} of pipeline ${pipelineId} is ambiguous: ${matches.map((v) => v.codeVersion).join(", ")}`);
}

const SOURCE_MAP = "//# sourceMappingURL=data:application/json;base64,";

/** The local files a stored bundle was built from, by their path, from its inline source map. */
function sourcesOf(pipelineId: string, version: { codeVersion: string; location: string; collectedAt: number | null }): Map<string, string> {
  const path = join(version.location, `${version.codeVersion}.mjs`);
  if (version.collectedAt !== null) throw new UsageError(`code version ${version.codeVersion} of pipeline ${pipelineId} was collected: its sources are gone (looked for ${path})`);
  let code: string;
  try {
    code = readFileSync(path, "utf8");
  } catch (error) {
    throw new UsageError(`code version ${version.codeVersion} of pipeline ${pipelineId} cannot be read: ${(error as NodeJS.ErrnoException).code === "ENOENT" ? "not found" : (error as Error).message}: looked for ${path}`);
  }
  const at = code.lastIndexOf(SOURCE_MAP);
  if (at < 0) throw new UsageError(`code version ${version.codeVersion} of pipeline ${pipelineId}: ${path} carries no source map`);
  const map = JSON.parse(Buffer.from(code.slice(at + SOURCE_MAP.length).trim(), "base64").toString("utf8")) as { sources: string[]; sourcesContent?: (string | null)[] };
  return new Map(map.sources.map((source, i) => [source.replace(/^(\.\.\/)+/, ""), map.sourcesContent?.[i] ?? ""]));
}
