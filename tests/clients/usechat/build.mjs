// Builds the app once per supported `ai` major into dist/ai5, dist/ai6, dist/ai7, with Vite.
// Skips the build when dist/stamp matches a hash of the sources and the lock file.
//
// Each build points `@ai-sdk/react` at that major's alias package (ai-sdk-react-2 is ai 5, -3 is ai 6,
// -4 is ai 7) and `ai` at the exact `ai` version that package depends on.

import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";

const root = dirname(fileURLToPath(import.meta.url));
const modules = join(root, "node_modules");
const BUILDS = { 5: "ai-sdk-react-2", 6: "ai-sdk-react-3", 7: "ai-sdk-react-4" };

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

for (const [major, reactPackage] of Object.entries(BUILDS)) {
  const reactDir = join(modules, reactPackage);
  const nestedAi = join(reactDir, "node_modules", "ai");
  const aiDir = existsSync(nestedAi) ? nestedAi : join(modules, "ai");
  const aiVersion = JSON.parse(readFileSync(join(aiDir, "package.json"), "utf8")).version;
  if (!aiVersion.startsWith(`${major}.`)) throw new Error(`${reactPackage} resolved ai ${aiVersion}, not ai ${major}`);
  await build({
    root,
    base: "./",
    configFile: false,
    logLevel: "error",
    define: { __AI_MAJOR__: JSON.stringify(aiVersion) },
    resolve: { alias: [
      { find: /^@ai-sdk\/react$/, replacement: reactDir },
      { find: /^ai$/, replacement: aiDir },
    ] },
    build: { outDir: join(root, "dist", `ai${major}`), emptyOutDir: true, sourcemap: false },
  });
}
writeFileSync(stampFile, stamp);
