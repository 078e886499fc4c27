// Page weight and first paint of the chat page (/) and the dashboard
// (/dashboard) in Debian's headless Chromium (puppeteer-core from the web
// tests' install, tests/web/install.sh): each page loaded RUNS times in a
// fresh tab with the cache off; bytes are what the page fetched before its
// load event (document, scripts and style sheet; /status and API calls
// excluded), first paint is first-contentful-paint. A benchmark, not a test.
//   node bench/web_pages.mjs --splash build/splash --model build/server-tiny.gguf --deps build/web-tests [--runs 9]
import { execFileSync } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";
import { options, requireDeps, startServer } from "../tests/server/lib.mjs";

const opts = options();
const { values } = parseArgs({ options: { runs: { type: "string" } }, strict: false });
const RUNS = Number(values.runs || 9);
const puppeteer = requireDeps(opts.deps)("puppeteer-core");
const chromium = execFileSync("sh", ["-c", "command -v chromium"]).toString().trim();
const srv = await startServer(opts);
const browser = await puppeteer.launch({ executablePath: chromium, headless: true,
    userDataDir: path.join(opts.deps, "bench-profile"), args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
try {
    for (const page of ["/", "/dashboard"]) {
        const paints = [];
        let bytes = 0, files = 0;
        for (let i = 0; i < RUNS; i++) {
            const tab = await browser.newPage();
            await tab.bringToFront(); // a background tab never paints
            await tab.setCacheEnabled(false);
            await tab.goto(srv.base + page, { waitUntil: "load" });
            // the paint entry can land after the load event on a busy machine
            await tab.waitForFunction(() => performance.getEntriesByType("paint").some((p) => p.name === "first-contentful-paint"),
                { timeout: 10000 }).catch(() => {});
            const m = await tab.evaluate(() => {
                const res = performance.getEntriesByType("resource").filter((r) => r.name.includes("/web/"));
                return {
                    fcp: performance.getEntriesByType("paint").find((p) => p.name === "first-contentful-paint")?.startTime,
                    bytes: performance.getEntriesByType("navigation")[0].decodedBodySize + res.reduce((n, r) => n + r.decodedBodySize, 0),
                    files: 1 + res.length,
                };
            });
            if (Number.isFinite(m.fcp)) paints.push(m.fcp);
            bytes = m.bytes, files = m.files;
            await tab.close();
        }
        console.log(`${page}: ${bytes} bytes in ${files} files; first contentful paint median ${median(paints).toFixed(0)} ms ` +
            `(min ${Math.min(...paints).toFixed(0)}, max ${Math.max(...paints).toFixed(0)}, ${paints.length} of ${RUNS} loads painted)`);
    }
} finally {
    await browser.close();
    await srv.stop();
}
