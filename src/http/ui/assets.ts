import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

/**
 * The UI's stylesheet and script, read once and served by idem under a name that changes with
 * their content, so browsers may cache them for good and nothing is ever fetched from elsewhere.
 */
export interface Asset {
  path: string;
  type: string;
  body: Buffer;
  gzipped: Buffer;
}

/**
 * Next to this module when it runs from src/; from dist/src/http/ui/ the compiler copied no
 * stylesheet, so the files are read from the package's src/http/ui/assets/ (shipped with it).
 */
function locate(file: string): URL {
  const beside = new URL(`./assets/${file}`, import.meta.url);
  if (existsSync(beside)) return beside;
  const inSource = new URL(`../../../../src/http/ui/assets/${file}`, import.meta.url);
  if (existsSync(inSource)) return inSource;
  throw new Error(`the web UI's ${file} is missing (looked in ${beside.pathname} and ${inSource.pathname})`);
}

function load(file: string, type: string, ext: string): Asset {
  const body = readFileSync(locate(file));
  const hash = createHash("sha256").update(body).digest("hex").slice(0, 10);
  return { path: `/ui/assets/idem.${hash}.${ext}`, type, body, gzipped: gzipSync(body, { level: 9 }) };
}

export const ASSETS = {
  css: load("idem.css", "text/css; charset=utf-8", "css"),
  js: load("idem.js", "text/javascript; charset=utf-8", "js"),
} as const;

export function assetPath(kind: keyof typeof ASSETS): string {
  return ASSETS[kind].path;
}
