// Brotli of Plotly.js's bundle, made once when the bundle is built (scripts/plotly_bundle.mjs, npm's postinstall),
// never while serving: at the best quality it takes seconds of CPU and is some 17% smaller than gzip at its best,
// which a slow link feels first (about 0.35 s at 1.5 Mbps).  The file is named after the bundle's content hash, so
// that the app never serves one made from another version of the bundle (app/web/core/assets.py reads it by that
// name).
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, basename, join } from "node:path";
import { brotliCompressSync, constants } from "node:zlib";

export function writeBrotli(bundle) {
  const body = readFileSync(bundle);
  const tag = createHash("sha256").update(body).digest("hex").slice(0, 20);
  const folder = dirname(bundle);
  const prefix = `${basename(bundle)}.`;
  for (const name of readdirSync(folder)) {
    if (name.startsWith(prefix) && name.endsWith(".br")) unlinkSync(join(folder, name));
  }
  const compressed = brotliCompressSync(body, {
    params: {
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
    },
  });
  writeFileSync(join(folder, `${prefix}${tag}.br`), compressed);
  console.log(`${bundle}: brotli ${compressed.length} bytes`);
}
