import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** A pipeline file bundled with the local modules it imports; packages stay imports. */
export interface Bundle {
  code: string;
  /** The packages it imports, each with the version installed where it was built ("unknown" when none is found). */
  packages: Record<string, string>;
  /** The content hash of the code and the package versions. */
  codeVersion: string;
  /**
   * The files it was built from, absolute: each local module esbuild read, and the manifest
   * (`package.json`) each package version was read from. What `bundle-inputs.ts` stamps.
   */
  inputs: string[];
}

/**
 * The file cannot be bundled: the compiler refused it or a file it imports (a syntax error, an
 * import that does not resolve), or it imports a path computed at run time, which no bundle can
 * hold (`import(name)`; a template like `import(\`./lib/${name}.ts\`)` is bundled whole).
 */
export class BundleBuildError extends Error {}

/** `import(` of anything but a literal, as esbuild prints what it left to run time. */
const COMPUTED_IMPORT = /\bimport\(\s*(?!["'`])/;

/**
 * Bundles a pipeline file and every local module it imports into one ES module, so that what a
 * run was created with can be stored and run again unchanged, wherever and whenever its attempts
 * run. Packages (`idem` among them) are left as imports and their versions recorded: they belong
 * to the machine, not to the pipeline. Each local file keeps its own `import.meta.url`, `dirname`
 * and `filename` (files it reads beside itself are found), and the source map leads back to the
 * original files and lines. `outFile` is where the bundle will be imported from: its source
 * map's paths are relative to it.
 */
export async function buildBundle(file: string, projectDir: string, outFile: string): Promise<Bundle> {
  const esbuild = await import("esbuild");
  let result;
  try {
    result = await esbuild.build({
      entryPoints: [file],
      absWorkingDir: projectDir,
      bundle: true,
      write: false,
      format: "esm",
      platform: "node",
      target: "node20",
      packages: "external",
      sourcemap: "inline",
      outfile: outFile,
      metafile: true,
      logLevel: "silent",
      plugins: [{
        name: "idem-import-meta",
        setup(build) {
          // One define per file, which a build's own `define` cannot do: each is compiled alone first.
          build.onLoad({ filter: /\.(ts|mts|tsx)$/ }, async (args) => {
            const source = readFileSync(args.path, "utf8");
            const compiled = await esbuild.transform(source, {
              loader: args.path.endsWith(".tsx") ? "tsx" : "ts",
              format: "esm",
              target: "node20",
              sourcemap: "inline",
              sourcefile: args.path,
              define: {
                "import.meta.url": JSON.stringify(pathToFileURL(args.path).href),
                "import.meta.dirname": JSON.stringify(dirname(args.path)),
                "import.meta.filename": JSON.stringify(args.path),
              },
            });
            return { contents: compiled.code, loader: "js", resolveDir: dirname(args.path) };
          });
        },
      }],
    });
  } catch (error) {
    const first = (error as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors?.[0];
    if (!first) throw error;
    throw new BundleBuildError(`${first.location ? `${first.location.file}:${first.location.line}: ` : ""}${first.text}`);
  }
  const code = result.outputFiles[0]!.text;
  if (COMPUTED_IMPORT.test(code)) throw new BundleBuildError(`${file} imports a path computed at run time`);
  const imports = Object.values(result.metafile.outputs).flatMap((o) => o.imports).filter((i) => i.external).map((i) => i.path);
  const packages: Record<string, string> = {};
  const manifests: string[] = [];
  for (const name of [...new Set(imports.map(packageName).filter((n): n is string => n !== null))].sort()) {
    const installed = installedVersion(name, projectDir);
    packages[name] = installed.version;
    if (installed.manifest) manifests.push(installed.manifest);
  }
  const sources = Object.keys(result.metafile.inputs).map((input) => resolve(projectDir, input));
  return { code, packages, codeVersion: codeVersionOf(code, packages), inputs: [...sources, ...manifests] };
}

/** The version a bundle's content hashes to: its code and the versions of the packages it was built against. */
export function codeVersionOf(code: string, packages: Record<string, string>): string {
  return createHash("sha256").update(code).update("\0").update(JSON.stringify(packages)).digest("hex").slice(0, 20);
}

const BUILTIN = new Set(builtinModules);

/** `@scope/name/sub` -> `@scope/name`; builtins and paths are no package. */
function packageName(specifier: string): string | null {
  if (specifier.startsWith("node:") || specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("file:")) return null;
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
  return BUILTIN.has(name) ? null : name;
}

/**
 * The version Node would load from the project: node_modules up the tree, else the package the
 * project is part of (a self-reference); with the manifest it was read from.
 */
function installedVersion(name: string, projectDir: string): { version: string; manifest: string | null } {
  for (let dir = projectDir; ; dir = dirname(dir)) {
    const installed = join(dir, "node_modules", name, "package.json");
    if (existsSync(installed)) return { version: versionIn(installed) ?? "unknown", manifest: installed };
    const own = join(dir, "package.json");
    if (existsSync(own)) {
      try {
        const manifest = JSON.parse(readFileSync(own, "utf8")) as { name?: string; version?: string };
        if (manifest.name === name) return { version: manifest.version ?? "unknown", manifest: own };
      } catch {
        // not JSON: not this package
      }
    }
    if (dirname(dir) === dir) return { version: "unknown", manifest: null };
  }
}

function versionIn(manifest: string): string | null {
  try {
    return (JSON.parse(readFileSync(manifest, "utf8")) as { version?: string }).version ?? null;
  } catch {
    return null;
  }
}
