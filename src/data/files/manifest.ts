import { existsSync, readFileSync } from "node:fs";
import { stat } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import { DataError, DefinitionError } from "../../core/model/errors.ts";
import type { WriteContext } from "../context.ts";
import { writeFileAtomic } from "./atomic-file.ts";

export const MANIFEST_NAME = "_manifest.json";

export interface ManifestFile {
  /** Relative to the manifest's directory. */
  path: string;
  rows: number;
  bytes: number;
}

export interface Manifest {
  runId: string;
  pipelineId: string;
  taskId: string;
  businessDates: string[];
  watermark: string | number | null;
  files: ManifestFile[];
  totalRows: number;
  writtenAt: string;
}

/**
 * Written last, after every data file of the run is in place: its presence says "this run's
 * output is complete". Each listed file must exist; its size is recorded so a reader can tell a
 * file replaced since.
 */
export async function writeManifest(
  dir: string,
  input: { context: WriteContext; businessDates: readonly string[]; watermark?: string | number | null; files: readonly { path: string; rows: number }[]; now?: () => Date },
): Promise<Manifest> {
  const files: ManifestFile[] = [];
  for (const f of input.files) {
    if (isAbsolute(f.path) || f.path.split(/[\\/]/).includes("..")) throw new DefinitionError(`manifest in ${dir}: file paths must be relative and inside it (${f.path})`);
    const full = join(dir, f.path);
    if (!existsSync(full)) throw new DataError(`manifest in ${dir}: ${f.path} does not exist; a manifest is written only after all data files`);
    files.push({ path: f.path, rows: f.rows, bytes: (await stat(full)).size });
  }
  const manifest: Manifest = {
    runId: input.context.runId,
    pipelineId: input.context.pipelineId,
    taskId: input.context.taskId,
    businessDates: [...input.businessDates],
    watermark: input.watermark ?? null,
    files,
    totalRows: files.reduce((n, f) => n + f.rows, 0),
    writtenAt: (input.now?.() ?? new Date()).toISOString(),
  };
  await writeFileAtomic(join(dir, MANIFEST_NAME), JSON.stringify(manifest, null, 2) + "\n");
  return manifest;
}

export function readManifest(dir: string): Manifest | null {
  const file = join(dir, MANIFEST_NAME);
  if (!existsSync(file)) return null;
  return JSON.parse(readFileSync(file, "utf8")) as Manifest;
}

/** Refuses to read a directory whose writer has not finished (or whose files changed since). */
export async function requireManifest(dir: string, expect: { businessDate?: string } = {}): Promise<Manifest> {
  const manifest = readManifest(dir);
  if (!manifest) throw new DataError(`${dir}: no ${MANIFEST_NAME}; its writer has not finished, refusing to read`);
  if (expect.businessDate && !manifest.businessDates.includes(expect.businessDate)) {
    throw new DataError(`${dir}: the manifest of run ${manifest.runId} covers ${manifest.businessDates.join(", ") || "no dates"}, not ${expect.businessDate}`);
  }
  for (const f of manifest.files) {
    const full = join(dir, f.path);
    if (!existsSync(full)) throw new DataError(`${dir}: ${f.path} is listed in the manifest but missing`);
    const bytes = (await stat(full)).size;
    if (bytes !== f.bytes) throw new DataError(`${dir}: ${f.path} is ${bytes} bytes, the manifest says ${f.bytes}`);
  }
  return manifest;
}

/** Waits until the manifest appears (polling), then checks it; times out with a clear error. */
export async function waitForManifest(dir: string, options: { timeoutMs: number; pollMs?: number; businessDate?: string; signal?: AbortSignal }): Promise<Manifest> {
  const deadline = Date.now() + options.timeoutMs;
  const poll = options.pollMs ?? 250;
  for (;;) {
    const manifest = readManifest(dir);
    if (manifest && (!options.businessDate || manifest.businessDates.includes(options.businessDate))) {
      return requireManifest(dir, options.businessDate ? { businessDate: options.businessDate } : {});
    }
    if (options.signal?.aborted) throw new Error(`${dir}: stopped waiting for ${MANIFEST_NAME}`);
    if (Date.now() >= deadline) {
      throw new DataError(`${dir}: no ${MANIFEST_NAME}${options.businessDate ? ` for ${options.businessDate}` : ""} after ${options.timeoutMs} ms; refusing to read`);
    }
    await new Promise((r) => setTimeout(r, Math.min(poll, Math.max(1, deadline - Date.now()))));
  }
}
