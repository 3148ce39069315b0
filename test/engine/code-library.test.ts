import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildBundle } from "../../src/engine/project/build-bundle.ts";
import { CodeLibrary } from "../../src/engine/project/code-library.ts";
import { makeProject, removeProject } from "../support/processes.ts";

/** The entry imports a local module (extensionless, so a file added beside it can change what it resolves to) and a package. */
const FILES = {
  "pipelines/p.ts": `import { CODE } from "../lib/version";\nimport pad from "leftpad";\nexport const code = pad(CODE);\n`,
  "lib/version.ts": `export const CODE = "v1";\n`,
  "node_modules/leftpad/package.json": JSON.stringify({ name: "leftpad", version: "1.0.0", type: "module", main: "index.js" }),
  "node_modules/leftpad/index.js": "export default (s) => s;\n",
};

const projects: string[] = [];
afterEach(() => {
  for (const dir of projects.splice(0)) removeProject(dir);
});

/** A library over a fresh project that counts its esbuild builds; `settled` times its builds well after the files were written. */
function setUp(settled = true) {
  const project = makeProject(FILES);
  projects.push(project);
  const builds: string[] = [];
  const library = () => new CodeLibrary(join(project, ".idem", "bundles"), project, {
    build: (file, projectDir, outFile) => {
      builds.push(file);
      return buildBundle(file, projectDir, outFile);
    },
    now: settled ? () => Date.now() + 5_000 : Date.now,
  });
  return { project, builds, library, entry: join(project, "pipelines/p.ts") };
}

describe("CodeLibrary: a file whose inputs did not change is not bundled again", () => {
  it("builds an unchanged file once across processes (libraries), and gives the same version and copy", async () => {
    const { builds, library, entry } = setUp();
    const first = await library().keep(entry);
    const again = await library().keep(entry);
    expect(builds).toHaveLength(1);
    expect(again).toEqual(first);
    expect(existsSync(again.bundle)).toBe(true);
  });

  it("a changed local module, the pipeline file untouched, is a new version", async () => {
    const { project, builds, library, entry } = setUp();
    const first = await library().keep(entry);
    const entryBefore = statSync(entry, { bigint: true });
    writeFileSync(join(project, "lib/version.ts"), `export const CODE = "v2";\n`);
    const second = await library().keep(entry);
    expect(statSync(entry, { bigint: true }).ctimeNs).toBe(entryBefore.ctimeNs);
    expect(builds).toHaveLength(2);
    expect(second.codeVersion).not.toBe(first.codeVersion);
    expect(readFileSync(second.bundle, "utf8")).toContain(`"v2"`);
    // A change of the same size, as a one-letter edit is: still a new version.
    writeFileSync(join(project, "lib/version.ts"), `export const CODE = "v3";\n`);
    expect((await library().keep(entry)).codeVersion).not.toBe(second.codeVersion);
  });

  it("a file added beside a module that the import now resolves to is a new version", async () => {
    const { project, builds, library, entry } = setUp();
    const first = await library().keep(entry);
    writeFileSync(join(project, "lib/version.tsx"), `export const CODE = "from tsx";\n`);
    const second = await library().keep(entry);
    expect(builds).toHaveLength(2);
    expect(second.codeVersion).not.toBe(first.codeVersion);
    expect(readFileSync(second.bundle, "utf8")).toContain("from tsx");
  });

  it("builds again when a file that steers resolution (a tsconfig.json above a module) appears, changes or goes", async () => {
    const { project, builds, library, entry } = setUp();
    await library().keep(entry);
    const tsconfig = join(project, "tsconfig.json");
    writeFileSync(tsconfig, JSON.stringify({ compilerOptions: { baseUrl: "." } }));
    await library().keep(entry);
    writeFileSync(tsconfig, JSON.stringify({ compilerOptions: { baseUrl: "lib" } }));
    await library().keep(entry);
    rmSync(tsconfig);
    await library().keep(entry);
    await library().keep(entry);
    expect(builds).toHaveLength(4);
  });

  it("a package's new version is a new code version", async () => {
    const { project, library, entry } = setUp();
    const first = await library().keep(entry);
    writeFileSync(join(project, "node_modules/leftpad/package.json"), JSON.stringify({ name: "leftpad", version: "1.0.1", type: "module", main: "index.js" }));
    const second = await library().keep(entry);
    expect(second.packages).toEqual({ leftpad: "1.0.1" });
    expect(second.codeVersion).not.toBe(first.codeVersion);
  });

  it("does not remember a build whose files changed within a second of it: they may have changed while it read them", async () => {
    const { builds, library, entry } = setUp(false);
    await library().keep(entry);
    await library().keep(entry);
    expect(builds).toHaveLength(2);
  });

  it("builds again when this machine's copy no longer hashes to its version, and stores a collected bundle anew", async () => {
    const { project, builds, library, entry } = setUp();
    const first = await library().keep(entry);
    writeFileSync(first.bundle, readFileSync(first.bundle, "utf8").replace(`"v1"`, `"v9"`));
    const second = await library().keep(entry);
    expect(builds).toHaveLength(2);
    expect(second.codeVersion).toBe(first.codeVersion);
    expect(readFileSync(second.bundle, "utf8")).toContain(`"v1"`);

    // Collected: the stored files went; loading the unchanged file stores them again, without a build.
    const stored = join(project, ".idem", "bundles", `${first.codeVersion}.mjs`);
    rmSync(stored);
    rmSync(join(project, ".idem", "bundles", `${first.codeVersion}.json`));
    await library().keep(entry);
    expect(builds).toHaveLength(2);
    expect(readFileSync(stored, "utf8")).toBe(readFileSync(first.bundle, "utf8"));
    expect(JSON.parse(readFileSync(join(project, ".idem", "bundles", `${first.codeVersion}.json`), "utf8"))).toMatchObject({ file: "pipelines/p.ts", packages: { leftpad: "1.0.0" } });
  });
});
