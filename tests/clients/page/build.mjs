// Bundles the chat page (src/main.js with the `ai` package) into app/static/chat.js with esbuild.
// `node build.mjs` writes the bundle; `node build.mjs --check` exits 1 when the checked-in bundle
// differs from what the sources build to (tests/test_chat_page.py runs it).

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = dirname(fileURLToPath(import.meta.url));
const target = join(root, "..", "..", "..", "app", "static", "chat.js");

// zod ships error messages in some 50 languages that the page never selects; only English is kept.
const englishOnly = {
  name: "zod-english-only",
  setup(builder) {
    builder.onLoad({ filter: /zod[\\/]v4[\\/]locales[\\/][^\\/]+\.js$/ }, (file) =>
      /[\\/](en|index)\.js$/.test(file.path) ? undefined : { contents: "export default () => ({});", loader: "js" },
    );
  },
};

const result = await build({
  entryPoints: [join(root, "src", "main.js")],
  absWorkingDir: root,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  legalComments: "none",
  charset: "utf8",
  write: false,
  logLevel: "error",
  plugins: [englishOnly],
});
const banner = "// chatgate chat page: built from tests/clients/page by scripts/build-page.sh; do not edit.\n";
const bundle = banner + result.outputFiles[0].text;

if (process.argv.includes("--check")) {
  const current = readFileSync(target, "utf8");
  if (current !== bundle) {
    process.stderr.write("app/static/chat.js is not what tests/clients/page builds: run scripts/build-page.sh\n");
    process.exit(1);
  }
} else {
  writeFileSync(target, bundle);
}
