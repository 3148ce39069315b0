#!/usr/bin/env node
// Runs a TypeScript entry point (a benchmark, the demo) straight from the source. Start it with
// `node --conditions=idem-source` so that "idem" imported by pipeline files is the source too.
import { register } from "tsx/esm/api";
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

register();
const [entry, ...rest] = process.argv.slice(2);
if (!entry) {
  console.error("usage: run-ts.js <file.ts> [args...]");
  process.exit(2);
}
process.argv = [process.argv[0], resolve(entry), ...rest];
await import(pathToFileURL(resolve(entry)).href);
