import { statSync } from "node:fs";
import { dirname } from "node:path";

/**
 * A file or directory as the file system describes it without reading it. The change time and
 * the inode change with every write and every replacement (a deploy that renames a new file in),
 * and no tool sets them back, unlike the modification time, which `rsync -t` or `touch -d` do.
 */
export interface InputStamp {
  path: string;
  size: number;
  mtimeNs: string;
  ctimeNs: string;
  ino: string;
}

/**
 * A file changed this close to a build (or after it started) may have changed while esbuild was
 * reading it, or within one tick of the file system's clock: its stamp could describe contents
 * the bundle does not hold, so such a build is not remembered and the next load builds again.
 */
const SETTLED_MS = 1_000;

/**
 * The stamps of what a bundle was built from: each input, each input's directory (a file added
 * beside a module can change what an import resolves to), and the project directory with its
 * `tsconfig.json` when there is one. Null when an input is gone, or when one changed within
 * `SETTLED_MS` of `builtAt` (the build is not remembered).
 */
export function stampInputs(inputs: readonly string[], projectDir: string, builtAt: number): InputStamp[] | null {
  const paths = new Set<string>([projectDir, `${projectDir}/tsconfig.json`]);
  for (const input of inputs) paths.add(dirname(input)).add(input);
  const stamps: InputStamp[] = [];
  const settledBefore = BigInt(builtAt - SETTLED_MS) * 1_000_000n;
  for (const path of [...paths].sort()) {
    const stamp = stampOf(path);
    if (stamp === undefined) {
      if (path.endsWith("/tsconfig.json")) continue; // none: the project directory's own stamp says when one appears
      return null;
    }
    if (BigInt(stamp.ctimeNs) >= settledBefore || BigInt(stamp.mtimeNs) >= settledBefore) return null;
    stamps.push(stamp);
  }
  return stamps;
}

/** Whether every stamped file and directory is as it was stamped. */
export function unchanged(stamps: readonly InputStamp[]): boolean {
  return stamps.every((s) => {
    const now = stampOf(s.path);
    return now !== undefined && now.size === s.size && now.mtimeNs === s.mtimeNs && now.ctimeNs === s.ctimeNs && now.ino === s.ino;
  });
}

function stampOf(path: string): InputStamp | undefined {
  const stat = statSync(path, { bigint: true, throwIfNoEntry: false });
  if (!stat) return undefined;
  return { path, size: Number(stat.size), mtimeNs: String(stat.mtimeNs), ctimeNs: String(stat.ctimeNs), ino: String(stat.ino) };
}
