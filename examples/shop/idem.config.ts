import { defineConfig } from "idem";

export default defineConfig({
  stateDir: ".idem",
  pipelines: "pipelines",
});
