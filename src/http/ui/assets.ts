import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
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

function load(file: string, type: string, ext: string): Asset {
  const body = readFileSync(new URL(`./assets/${file}`, import.meta.url));
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
