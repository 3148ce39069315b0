/**
 * How fast the CLI answers: wall time of `idem --help`, `idem runs`, `idem validate` and
 * `idem next` on a copy of the shop example, as ratios to `node -e 0` measured in the same rounds.
 * The commands take turns within each round (the order rotates), so load on the machine hits all
 * of them alike. Prints one JSON line. Targets: --help and runs <= 3x, validate and next <= 6x.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";

const repo = resolve(import.meta.dirname, "../..");
const bin = join(repo, "bin/idem.js");
const ROUNDS = Number(process.env.ROUNDS ?? 15);
const TARGETS: Record<string, number> = { "idem --help": 3, "idem runs shop_orders": 3, "idem validate": 6, "idem next shop_orders": 6 };

mkdirSync(join(repo, ".tmp"), { recursive: true });
const dir = mkdtempSync(join(repo, ".tmp", "bench-cli-"));
cpSync(join(repo, "examples/shop"), dir, { recursive: true, filter: (src) => !src.includes(".idem") });

const commands: Record<string, string[]> = {
  "node -e 0": ["-e", "0"],
  ...Object.fromEntries(Object.keys(TARGETS).map((name) => [name, [bin, ...name.split(" ").slice(1)]])),
};

function timed(args: string[]): number {
  const t0 = performance.now();
  const result = spawnSync(process.execPath, args, { cwd: dir, encoding: "utf8" });
  const ms = performance.now() - t0;
  if (result.status !== 0) throw new Error(`${args.join(" ")}: exit ${result.status}: ${result.stderr}`);
  return ms;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  // `idem runs` on a state with a run in it: the path that reads the state store only.
  timed([bin, "run", "shop_orders", "--date", "2026-09-01"]);
  const names = Object.keys(commands);
  const samples = new Map(names.map((n) => [n, [] as number[]]));
  for (const name of names) timed(commands[name]!); // warm the file cache and the config cache
  const load = loadavg()[0]!;
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(round + i) % names.length]!;
      samples.get(name)!.push(timed(commands[name]!));
    }
  }
  const node = median(samples.get("node -e 0")!);
  const figures = Object.fromEntries(
    Object.keys(TARGETS).map((name) => {
      const ms = median(samples.get(name)!);
      return [name, { ms: Math.round(ms), ratio: Number((ms / node).toFixed(2)), target: TARGETS[name] }];
    }),
  );
  console.log(JSON.stringify({ bench: "cli-start", rounds: ROUNDS, nodeMs: Math.round(node), loadBefore: load, loadAfter: loadavg()[0], figures }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
