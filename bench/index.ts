/**
 * `npm run bench`: runs every benchmark file under bench/ in its own process, one after another
 * (they share 2 cores; side by side they would measure each other), and prints their JSON lines.
 * `npm run bench -- executor` runs only the files whose path contains "executor".
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const benchDir = fileURLToPath(new URL(".", import.meta.url));
const root = join(benchDir, "..");
const filter = process.argv[2];

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "lib" ? [] : files(full);
    return entry.name.endsWith(".ts") && full !== join(benchDir, "index.ts") ? [full] : [];
  });
}

const selected = files(benchDir).filter((f) => !filter || f.includes(filter)).sort();
console.log(`# ${new Date().toISOString()} node ${process.version}, ${selected.length} benchmark file(s)`);
let failed = 0;
for (const file of selected) {
  const name = relative(root, file);
  console.log(`# ${name}`);
  const result = spawnSync(process.execPath, [join(root, "bin/run-ts.js"), file], { stdio: "inherit", timeout: 20 * 60_000 });
  if (result.status !== 0) {
    failed++;
    console.log(`# ${name} failed (exit ${result.status ?? result.signal})`);
  }
}
process.exitCode = failed > 0 ? 1 : 0;
