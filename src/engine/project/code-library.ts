import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { buildBundle, codeVersionOf } from "./build-bundle.ts";
import { stampInputs, unchanged, type InputStamp } from "./bundle-inputs.ts";

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

/** What this machine remembers of a file's last build: its version, and the stamps of what it was built from. */
interface BuildRecord {
  file: string;
  codeVersion: string;
  packages: Record<string, string>;
  inputs: InputStamp[];
}

/** A run's code version could not be loaded: the message names the version and where it was looked for. */
export class CodeNotFoundError extends Error {}

/**
 * Where pipeline bundles are kept: `<location>/<codeVersion>.mjs`, written once and never
 * changed (a version is its content's hash), with `<codeVersion>.json` saying what it was built
 * from. The location is the state directory's `bundles` on one machine, or a directory every
 * worker reads (`bundles` in idem.config.ts). Each machine imports its own copy under
 * `<project>/.idem/cache/bundles/`, checked against the version's hash when copied, so a
 * bundle's package imports resolve to the packages installed in the project. Beside the copies
 * (`builds/`), it remembers each file's last build with the stamps of its inputs, so that a
 * process loading unchanged files does not start esbuild at all.
 */
export class CodeLibrary {
  readonly location: string;
  readonly #projectDir: string;
  readonly #cacheDir: string;
  readonly #build: typeof buildBundle;
  readonly #now: () => number;

  /**
   * `cacheDir`: where this machine keeps its copies and what it remembers of its builds (default
   * `<projectDir>/.idem/cache/bundles`); `build`: how a file is bundled (esbuild's, unless a test
   * counts the builds); `now`: the clock a build is timed by (the system's, unless a test says
   * its files were written long before).
   */
  constructor(location: string, projectDir: string, options: { cacheDir?: string; build?: typeof buildBundle; now?: () => number } = {}) {
    this.location = location;
    this.#projectDir = projectDir;
    this.#cacheDir = options.cacheDir ?? join(projectDir, ".idem", "cache", "bundles");
    this.#build = options.build ?? buildBundle;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Bundles the file as it is now and stores the bundle (a no-op for a version stored already).
   * A file whose inputs are as they were at its last build here (`bundle-inputs.ts`) is not
   * built again: its version is the one built then, whose copy must still hash to it.
   */
  async keep(file: string): Promise<StoredCode> {
    const shown = relative(this.#projectDir, file) || file;
    const remembered = this.#unchangedBuild(file);
    if (remembered) {
      this.#store(remembered.codeVersion, shown, remembered.packages, remembered.code);
      return { codeVersion: remembered.codeVersion, packages: remembered.packages, file: shown, location: this.location, bundle: this.#copyPath(remembered.codeVersion) };
    }
    const builtAt = this.#now();
    const built = await this.#build(file, this.#projectDir, join(this.#cacheDir, "bundle.mjs"));
    this.#store(built.codeVersion, shown, built.packages, built.code);
    const bundle = this.#copyPath(built.codeVersion);
    // Made anew when it is not what was built (damaged: a remembered build found it not hashing to its version).
    if (!existsSync(bundle) || readFileSync(bundle, "utf8") !== built.code) writeOnce(bundle, built.code);
    const inputs = stampInputs(built.inputs, builtAt);
    if (inputs) writeOnce(this.#recordPath(file), JSON.stringify({ file, codeVersion: built.codeVersion, packages: built.packages, inputs } satisfies BuildRecord));
    return { codeVersion: built.codeVersion, packages: built.packages, file: shown, location: this.location, bundle };
  }

  /** The last build of the file here, if nothing it was built from changed since and its copy is intact. */
  #unchangedBuild(file: string): (BuildRecord & { code: string }) | null {
    let record: BuildRecord;
    let code: string;
    try {
      record = JSON.parse(readFileSync(this.#recordPath(file), "utf8")) as BuildRecord;
      if (record.file !== file || !unchanged(record.inputs)) return null;
      code = readFileSync(this.#copyPath(record.codeVersion), "utf8");
    } catch {
      return null; // none, or unreadable: build
    }
    return codeVersionOf(code, record.packages) === record.codeVersion ? { ...record, code } : null;
  }

  /** Writes the version to the location unless it is there (it may have been collected since). */
  #store(codeVersion: string, shown: string, packages: Record<string, string>, code: string): void {
    const stored = join(this.location, `${codeVersion}.mjs`);
    if (existsSync(stored)) return;
    // The manifest first: a bundle present is a bundle described.
    writeOnce(join(this.location, `${codeVersion}.json`), JSON.stringify({ codeVersion, file: shown, packages }, null, 2));
    writeOnce(stored, code);
  }

  #recordPath(file: string): string {
    return join(this.#cacheDir, "builds", `${createHash("sha256").update(file).digest("hex").slice(0, 20)}.json`);
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

