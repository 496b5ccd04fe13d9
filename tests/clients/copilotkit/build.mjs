// Builds the CopilotKit test app into dist/ with Vite; skipped when dist/stamp matches a hash of the
// sources and the lock file.

import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";

const root = dirname(fileURLToPath(import.meta.url));

function sourceHash() {
  const hash = createHash("sha256");
  const files = ["build.mjs", "index.html", "package-lock.json", ...readdirSync(join(root, "src")).map((f) => `src/${f}`)];
  for (const file of files.sort()) hash.update(file).update(readFileSync(join(root, file)));
  return hash.digest("hex");
}

const stampFile = join(root, "dist", "stamp");
const stamp = sourceHash();
if (existsSync(stampFile) && readFileSync(stampFile, "utf8") === stamp && !process.argv.includes("--force")) {
  process.exit(0);
}
await build({
  root,
  base: "./",
  configFile: false,
  logLevel: "error",
  build: { outDir: join(root, "dist"), emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 100_000 },
});
writeFileSync(stampFile, stamp);
