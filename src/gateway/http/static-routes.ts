/**
 * The web chat page (`/`), the operator console (`/console`) and their assets. Browser code is
 * written in TypeScript next to this file (type-checked with the repo) and served with its types
 * stripped by Bun's transpiler at startup: no bundler, no build step, no external resources. The
 * one package the pages use, marked, is served from node_modules as /assets/marked.js.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { OPERATOR_TOKEN_ENV } from "./auth.ts";
import type { Route } from "./router.ts";

const ASSET_DIR = join(import.meta.dir, "assets");

/**
 * Scripts only from this server, no inline script, no third-party anything. Images may be `blob:`
 * URLs: the chat page fetches the agent's files with its session header and shows them from those.
 */
const PAGE_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache",
};

/** Every `.ts` file under assets/ (the console's views live in assets/console/). */
async function scriptNames(): Promise<string[]> {
  const entries = await readdir(ASSET_DIR, { recursive: true });
  return entries
    .filter((name) => name.endsWith(".ts"))
    .map((name) => name.slice(0, -3).replaceAll("\\", "/"));
}

interface Asset {
  body: string;
  contentType: string;
}

export async function loadAssets(): Promise<Map<string, Asset>> {
  const transpiler = new Bun.Transpiler({ loader: "ts", target: "browser" });
  const assets = new Map<string, Asset>();
  const text = (name: string) => readFile(join(ASSET_DIR, name), "utf8");
  assets.set("/", { body: await text("chat.html"), contentType: "text/html; charset=utf-8" });
  assets.set("/console", { body: await text("console.html"), contentType: "text/html; charset=utf-8" });
  assets.set("/assets/style.css", { body: await text("style.css"), contentType: "text/css; charset=utf-8" });
  for (const name of await scriptNames()) {
    const body = linkPackages(transpiler.transformSync(await text(`${name}.ts`)));
    assets.set(`/assets/${name}.js`, { body, contentType: "text/javascript; charset=utf-8" });
  }
  // marked's own ESM build, from node_modules: self-contained, no CDN.
  const markedSource = await readFile(Bun.resolveSync("marked", import.meta.dir), "utf8");
  assets.set("/assets/marked.js", {
    body: markedSource.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, "\n"),
    contentType: "text/javascript; charset=utf-8",
  });
  return assets;
}

/** Package imports the browser cannot resolve, pointed at the copies this server serves. */
function linkPackages(script: string): string {
  return script.replace(/(from\s*|import\s*)(["'])marked\2/g, "$1$2/assets/marked.js$2");
}

export function staticRoutes(assets: Map<string, Asset>, operatorApiEnabled: boolean): Route[] {
  return [...assets].map(([path, asset]) => ({
    method: "GET",
    pattern: path,
    access: "public",
    handle: async () => {
      if (path === "/console" && !operatorApiEnabled)
        return new Response(
          `The operator console is disabled: set ${OPERATOR_TOKEN_ENV} and restart the gateway to enable it.\n`,
          { status: 403, headers: { "content-type": "text/plain; charset=utf-8" } },
        );
      return new Response(asset.body, { headers: { ...PAGE_HEADERS, "content-type": asset.contentType } });
    },
  }));
}
