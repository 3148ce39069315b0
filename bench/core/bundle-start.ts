/**
 * What bundling the pipeline files costs a process that loads them (`idem run`, `idem trigger`,
 * the daemons): in fresh processes, the time `CodeLibrary.keep` takes for the shop example's
 * pipeline file the first time (nothing stored: esbuild builds it) and every later time (the
 * same file again, as each start after the first finds it), and the wall time of
 * `idem next shop_orders` (which loads the pipelines) against `node -e 0`, in interleaved rounds.
 * Prints one JSON line.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";

const repo = resolve(import.meta.dirname, "../..");
const bin = join(repo, "bin/idem.js");
const library = join(repo, "dist/src/engine/project/code-library.js");
const ROUNDS = Number(process.env.ROUNDS ?? 15);

mkdirSync(join(repo, ".tmp"), { recursive: true });
const dir = mkdtempSync(join(repo, ".tmp", "bench-bundle-"));
cpSync(join(repo, "examples/shop"), dir, { recursive: true, filter: (src) => !src.includes(".idem") });
const file = join(dir, "pipelines/shop_orders.ts");
// Files written within a second of a build are not remembered with it (bundle-inputs.ts): a
// project is older than that when its processes start.
await new Promise((r) => setTimeout(r, 1_100));

/** One fresh process: the milliseconds its first `keep` of the file took. */
function keepOnce(): number {
  const script = `import { CodeLibrary } from ${JSON.stringify(library)};
const t0 = performance.now();
await new CodeLibrary(${JSON.stringify(join(dir, ".idem", "bundles"))}, ${JSON.stringify(dir)}).keep(${JSON.stringify(file)});
console.log(performance.now() - t0);`;
  const result = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: dir, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`keep: exit ${result.status}: ${result.stderr}`);
  return Number(result.stdout.trim());
}

function timed(args: string[]): number {
  const t0 = performance.now();
  const result = spawnSync(process.execPath, args, { cwd: dir, encoding: "utf8" });
  const ms = performance.now() - t0;
  if (result.status !== 0) throw new Error(`${args.join(" ")}: exit ${result.status}: ${result.stderr}`);
  return ms;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round1 = (ms: number) => Math.round(ms * 10) / 10;

try {
  const load = loadavg()[0]!;
  const first = keepOnce();
  const again: number[] = [];
  const node: number[] = [];
  const next: number[] = [];
  timed([bin, "next", "shop_orders"]); // the config's compiled cache, the state file
  for (let round = 0; round < ROUNDS; round++) {
    again.push(keepOnce());
    const pair = round % 2 === 0 ? [node, next] : [next, node];
    for (const samples of pair) samples.push(timed(samples === node ? ["-e", "0"] : [bin, "next", "shop_orders"]));
  }
  console.log(JSON.stringify({
    bench: "bundle-start", rounds: ROUNDS, loadBefore: load, loadAfter: loadavg()[0],
    keepFirstMs: round1(first), keepAgainMs: round1(median(again)),
    nodeMs: Math.round(median(node)), nextMs: Math.round(median(next)),
  }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
