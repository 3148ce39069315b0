import { statSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * A file or directory as the file system describes it without reading it, or the fact that it is
 * not there. The change time and the inode change with every write and every replacement (a
 * deploy that renames a new file in), and no tool sets them back, unlike the modification time,
 * which `rsync -t` or `touch -d` do.
 */
export type InputStamp = { path: string; size: number; mtimeNs: string; ctimeNs: string; ino: string } | { path: string; absent: true };

/**
 * A file changed this close to a build (or after it started) may have changed while esbuild was
 * reading it, or within one tick of the file system's clock: its stamp could describe contents
 * the bundle does not hold, so such a build is not remembered and the next load builds again.
 */
const SETTLED_MS = 1_000;

/** Files that change how esbuild resolves the imports of the files below them, present or not. */
const RESOLUTION_FILES = ["tsconfig.json", "jsconfig.json", "package.json"];

/**
 * The stamps of what a bundle was built from: each input, each input's directory (a file added
 * beside a module can change what an import resolves to), and in each directory above an input
 * the files that steer resolution, or their absence. Null when an input is gone, or when one
 * changed within `SETTLED_MS` of `builtAt` (the build is not remembered).
 */
export function stampInputs(inputs: readonly string[], builtAt: number): InputStamp[] | null {
  const required = new Set<string>();
  const optional = new Set<string>();
  for (const input of inputs) {
    required.add(input).add(dirname(input));
    for (let dir = dirname(input); ; dir = dirname(dir)) {
      for (const name of RESOLUTION_FILES) optional.add(join(dir, name));
      if (dirname(dir) === dir) break;
    }
  }
  const stamps: InputStamp[] = [];
  const settledBefore = BigInt(builtAt - SETTLED_MS) * 1_000_000n;
  for (const path of [...new Set([...required, ...optional])].sort()) {
    const stamp = stampOf(path);
    if ("absent" in stamp) {
      if (required.has(path)) return null;
    } else if (BigInt(stamp.ctimeNs) >= settledBefore || BigInt(stamp.mtimeNs) >= settledBefore) {
      return null;
    }
    stamps.push(stamp);
  }
  return stamps;
}

/** Whether every stamped file and directory is as it was stamped (and each absent one still absent). */
export function unchanged(stamps: readonly InputStamp[]): boolean {
  return stamps.every((was) => {
    const now = stampOf(was.path);
    if ("absent" in was || "absent" in now) return "absent" in was && "absent" in now;
    return now.size === was.size && now.mtimeNs === was.mtimeNs && now.ctimeNs === was.ctimeNs && now.ino === was.ino;
  });
}

function stampOf(path: string): InputStamp {
  const stat = statSync(path, { bigint: true, throwIfNoEntry: false });
  if (!stat) return { path, absent: true };
  return { path, size: Number(stat.size), mtimeNs: String(stat.mtimeNs), ctimeNs: String(stat.ctimeNs), ino: String(stat.ino) };
}
