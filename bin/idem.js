#!/usr/bin/env node
// The CLI runs as compiled JavaScript (dist/, built by `npm run build`, which `npm ci` and
// `npm pack` run); it loads tsx itself, and only when a command imports the user's TypeScript.
try {
  await import("../dist/src/cli/main.js");
} catch (error) {
  if (error?.code === "ERR_MODULE_NOT_FOUND" && String(error.message).includes("dist/src/cli/main.js")) {
    console.error("idem: dist/ is missing: run `npm run build` first");
    process.exit(2);
  }
  throw error;
}
