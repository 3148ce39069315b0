import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { buildBundle, codeVersionOf } from "./build-bundle.ts";

/** A pipeline file's code as stored: what runs pinned to `codeVersion` run. */
export interface StoredCode {
  codeVersion: string;
  packages: Record<string, string>;
  /** The pipeline file it was built from, relative to the project. */
  file: string;
  /** The directory it is stored in. */
  location: string;
  /** This machine's copy, the one imported (inside the project, so its packages resolve as the project's). */
  bundle: string;
}

/** A run's code version could not be loaded: the message names the version and where it was looked for. */
export class CodeNotFoundError extends Error {}

/**
 * Where pipeline bundles are kept: `<location>/<codeVersion>.mjs`, written once and never
 * changed (a version is its content's hash), with `<codeVersion>.json` saying what it was built
 * from. The location is the state directory's `bundles` on one machine, or a directory every
 * worker reads (`bundles` in idem.config.ts). Each machine imports its own copy under
 * `<project>/.idem/cache/bundles/`, checked against the version's hash when copied, so a
 * bundle's package imports resolve to the packages installed in the project.
 */
export class CodeLibrary {
  readonly location: string;
  readonly #projectDir: string;
  readonly #cacheDir: string;

  /** `cacheDir`: where this machine keeps its copies (default `<projectDir>/.idem/cache/bundles`). */
  constructor(location: string, projectDir: string, cacheDir = join(projectDir, ".idem", "cache", "bundles")) {
    this.location = location;
    this.#projectDir = projectDir;
    this.#cacheDir = cacheDir;
  }

  /** Bundles the file as it is now and stores the bundle (a no-op for a version stored already). */
  async keep(file: string): Promise<StoredCode> {
    const built = await buildBundle(file, this.#projectDir, join(this.#cacheDir, "bundle.mjs"));
    const shown = relative(this.#projectDir, file) || file;
    const stored = join(this.location, `${built.codeVersion}.mjs`);
    if (!existsSync(stored)) {
      // The manifest first: a bundle present is a bundle described.
      writeOnce(join(this.location, `${built.codeVersion}.json`), JSON.stringify({ codeVersion: built.codeVersion, file: shown, packages: built.packages }, null, 2));
      writeOnce(stored, built.code);
    }
    const bundle = this.#copyPath(built.codeVersion);
    if (!existsSync(bundle)) writeOnce(bundle, built.code);
    return { codeVersion: built.codeVersion, packages: built.packages, file: shown, location: this.location, bundle };
  }

  /**
   * This machine's copy of a stored version, made from the location if missing. Throws
   * `CodeNotFoundError` when the location lacks it or holds something else under its name.
   */
  copyOf(codeVersion: string): string {
    const bundle = this.#copyPath(codeVersion);
    if (existsSync(bundle)) return bundle;
    const stored = join(this.location, `${codeVersion}.mjs`);
    let code: string;
    let packages: Record<string, string>;
    try {
      code = readFileSync(stored, "utf8");
      packages = (JSON.parse(readFileSync(join(this.location, `${codeVersion}.json`), "utf8")) as { packages: Record<string, string> }).packages;
    } catch (error) {
      const why = (error as NodeJS.ErrnoException).code === "ENOENT" ? "not found" : `unreadable (${(error as Error).message})`;
      throw new CodeNotFoundError(`code version ${codeVersion}: ${why}: looked for ${stored}`);
    }
    const actual = codeVersionOf(code, packages);
    if (actual !== codeVersion) throw new CodeNotFoundError(`code version ${codeVersion}: ${stored} holds other code (version ${actual})`);
    writeOnce(bundle, code);
    return bundle;
  }

  #copyPath(codeVersion: string): string {
    if (!/^[0-9a-f]+$/.test(codeVersion)) throw new CodeNotFoundError(`code version ${JSON.stringify(codeVersion)} is not a version idem writes`);
    return join(this.#cacheDir, `${codeVersion}.mjs`);
  }
}

/** Whole or not at all, and never over what is there: processes on many machines may store one version at once. */
function writeOnce(path: string, text: string): void {
  mkdirSync(join(path, ".."), { recursive: true });
  const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, path);
}

