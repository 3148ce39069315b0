import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, extname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { enableTypeScript } from "./typescript-loader.ts";

/**
 * Imports the user's TypeScript (config, pipeline files and the local files they import) from
 * compiled copies kept under `<project>/.idem/cache/ts/`, so that a warm start costs neither
 * tsx's loader thread nor a compiler: each file is compiled once per change of its content.
 * The copies keep the original's `import.meta.url`, `dirname` and `filename` and carry source
 * maps, so errors point at the original file and line. A file whose imports cannot be followed
 * (an `import()` of a computed path) is loaded through tsx instead.
 */
export async function importTypeScript(file: string, projectDir: string, version: string | null = null): Promise<Record<string, unknown>> {
  // A new version (a pipeline file changed while the scheduler runs) needs a new module URL.
  const url = (path: string) => (version === null ? pathToFileURL(path).href : `${pathToFileURL(path).href}?v=${encodeURIComponent(version)}`);
  if (!COMPILED.test(file)) return import(url(file));
  let entry: string | null = null;
  try {
    entry = await compileGraph(resolve(file), join(projectDir, ".idem", "cache", "ts"), projectDir);
  } catch (error) {
    if (!(error instanceof NotFollowable)) throw error;
  }
  if (entry === null) {
    await enableTypeScript();
    return import(url(file));
  }
  process.setSourceMapsEnabled(true);
  return import(url(entry));
}

const COMPILED = /\.(ts|mts|tsx)$/;
// Bump when the shape of the compiled output changes: old copies are then ignored.
const FORMAT = "1";

class NotFollowable extends Error {}

interface Meta {
  hash: string;
  /** The local TypeScript files this one imports (absolute paths). */
  deps: string[];
}

type Transform = (code: string, file: string) => Promise<string>;

async function compileGraph(entry: string, cacheDir: string, projectDir: string): Promise<string> {
  let transform: Transform | null = null;
  const compiler = async () => (transform ??= await loadCompiler());
  const done = new Set<string>();
  const outPath = (source: string) => {
    const inside = relative(projectDir, source);
    return inside.startsWith("..") || inside.startsWith(sep) ? join(cacheDir, "abs", source) + ".mjs" : join(cacheDir, "project", inside) + ".mjs";
  };
  const visit = async (source: string): Promise<void> => {
    if (done.has(source)) return;
    done.add(source);
    const code = readFileSync(source, "utf8");
    const hash = createHash("sha256").update(FORMAT).update("\0").update(code).digest("hex").slice(0, 32);
    const out = outPath(source);
    const meta = readMeta(out);
    let deps: string[];
    if (meta?.hash === hash && existsSync(out)) deps = meta.deps;
    else {
      const compiled = await (await compiler())(code, source);
      const rewritten = rewriteImports(compiled, source, out, outPath);
      deps = rewritten.deps;
      writeAtomically(out, rewritten.code);
      writeAtomically(out + ".json", JSON.stringify({ hash, deps } satisfies Meta));
    }
    for (const dep of deps) await visit(dep);
  };
  await visit(entry);
  return outPath(entry);
}

function readMeta(out: string): Meta | null {
  try {
    return JSON.parse(readFileSync(out + ".json", "utf8")) as Meta;
  } catch {
    return null;
  }
}

function writeAtomically(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, path); // concurrent starts (a scheduler and its workers) each write whole files
}

async function loadCompiler(): Promise<Transform> {
  const esbuild = await import("esbuild");
  return async (code, file) => {
    try {
      const result = await esbuild.transform(code, {
        loader: file.endsWith(".tsx") ? "tsx" : "ts",
        format: "esm",
        target: "node20",
        sourcemap: "inline",
        sourcefile: file,
        define: {
          "import.meta.url": JSON.stringify(pathToFileURL(file).href),
          "import.meta.dirname": JSON.stringify(dirname(file)),
          "import.meta.filename": JSON.stringify(file),
        },
      });
      return result.code;
    } catch (error) {
      const first = (error as { errors?: { text: string; location?: { line: number; column: number } | null }[] }).errors?.[0];
      if (!first) throw error;
      // The shape tsx gives a compile error, which the pipeline loader turns into "file:line: does not compile".
      throw new Error(`Transform failed with 1 error:\n${file}:${first.location?.line ?? 1}:${first.location?.column ?? 0}: ERROR: ${first.text}`);
    }
  };
}

// esbuild prints every import at the start of a line, with double quotes.
const STATIC_IMPORT = /^((?:import|export)\b[^;"]*?\bfrom\s*|import\s*)"([^"]+)"/gm;
const DYNAMIC_IMPORT = /\bimport\(\s*("([^"]+)"\s*)?/g;

/** Points relative imports at the compiled copies (TypeScript) or the originals (anything else). */
function rewriteImports(code: string, source: string, out: string, outPath: (source: string) => string): { code: string; deps: string[] } {
  const deps = new Set<string>();
  const target = (specifier: string): string => {
    if (!specifier.startsWith(".") && !specifier.startsWith("/") && !specifier.startsWith("file:")) return specifier;
    const resolved = resolveLocal(specifier.startsWith("file:") ? fileURLToPath(specifier) : resolve(dirname(source), specifier));
    if (resolved === null) throw new NotFollowable();
    if (!COMPILED.test(resolved)) return pathToFileURL(resolved).href;
    deps.add(resolved);
    const path = relative(dirname(out), outPath(resolved)).split(sep).join("/");
    return path.startsWith(".") ? path : `./${path}`;
  };
  let rewritten = code.replace(STATIC_IMPORT, (_m, head: string, specifier: string) => `${head}"${target(specifier)}"`);
  rewritten = rewritten.replace(DYNAMIC_IMPORT, (match, literal: string | undefined, specifier: string | undefined) => {
    if (literal === undefined || specifier === undefined) throw new NotFollowable();
    return match.replace(`"${specifier}"`, `"${target(specifier)}"`);
  });
  return { code: rewritten, deps: [...deps] };
}

/** The file a relative import names, as TypeScript resolves it: `./x.js` may mean `./x.ts`, `./x` may mean `./x.ts` or `./x/index.ts`. */
function resolveLocal(path: string): string | null {
  const isFile = (p: string) => existsSync(p) && statSync(p).isFile();
  if (isFile(path)) return path;
  const ext = extname(path);
  const stem = ext ? path.slice(0, -ext.length) : path;
  const candidates =
    ext === ".js" ? [`${stem}.ts`, `${stem}.tsx`] : ext === ".mjs" ? [`${stem}.mts`] : ext === "" ? [`${path}.ts`, `${path}.tsx`, `${path}.mts`, `${path}.js`, join(path, "index.ts")] : [];
  return candidates.find(isFile) ?? null;
}
