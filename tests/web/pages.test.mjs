// The web pages over plain HTTP, no browser (issue 24): what `splash serve`
// answers on /, /dashboard and /web/*: types, Cache-Control, a
// Content-Security-Policy with no inline script or style and no other
// origin; pages with no inline script, style or handler attribute that the
// policy would have to allow; public routes under --api-key while the API
// still needs the key; the Host allowlist as for the API; unknown assets 404;
// HEAD; and the page weight of each page under 150 KB.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { options, startServer, request, get } from "../server/lib.mjs";

const opts = options();
const KEY = "web-test-key";
let srv;
before(async () => { srv = await startServer(opts, ["--api-key", KEY]); });
after(async () => { await srv?.stop(); });

const PAGES = { "/": "text/html", "/dashboard": "text/html" };
const ASSETS = { "/web/chat.js": "text/javascript", "/web/markdown.js": "text/javascript", "/web/common.js": "text/javascript",
    "/web/charts.js": "text/javascript", "/web/dashboard.js": "text/javascript", "/web/style.css": "text/css", "/web/icon.svg": "image/svg+xml" };

test("pages and assets are served with their type, no-cache and the security headers, without the API key", async () => {
    for (const [path, type] of Object.entries({ ...PAGES, ...ASSETS })) {
        const r = await get(srv.port, path);
        assert.equal(r.status, 200, path);
        assert.equal(r.headers["content-type"], type.startsWith("image/") ? type : `${type}; charset=utf-8`, path);
        assert.equal(r.headers["cache-control"], "no-cache", path);
        assert.equal(r.headers["x-content-type-options"], "nosniff", path);
        const csp = r.headers["content-security-policy"];
        assert.match(csp, /default-src 'none'/, path);
        assert.match(csp, /script-src 'self'(;|$)/, path);
        assert.match(csp, /style-src 'self'(;|$)/, path);
        assert.match(csp, /connect-src 'self'(;|$)/, path);
        assert.match(csp, /frame-ancestors 'none'/, path);
        assert.doesNotMatch(csp, /unsafe|https?:|\*/, path);
        assert.ok(r.text.length > 100, path);
    }
    // the API behind the pages still needs the key
    assert.equal((await get(srv.port, "/status")).status, 401);
    assert.equal((await get(srv.port, "/status", { Authorization: `Bearer ${KEY}` })).status, 200);
});

test("the pages hold no inline script, style or event handler and load nothing from another origin", async () => {
    for (const path of Object.keys(PAGES)) {
        const html = (await get(srv.port, path)).text;
        for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
            assert.match(m[1], /src="\/web\/[a-z]+\.js"/, `${path}: a script without src: ${m[0]}`);
            assert.equal(m[2].trim(), "", `${path}: inline script`);
        }
        assert.doesNotMatch(html, /<style\b|\sstyle=|\son[a-z]+=/i, `${path}: inline style or handler`);
        assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//i, `${path}: another origin`);
    }
});

test("unknown pages and assets are 404, HEAD answers without a body, POST is 405", async () => {
    for (const path of ["/web/", "/web/nope.js", "/web/../index.html", "/index.html", "/dashboard/", "/web/x/chat.js"]) {
        const r = await get(srv.port, path);
        assert.equal(r.status, 404, path);
        assert.equal(r.json.error.code, "not_found", path);
    }
    const head = await request(srv.port, "HEAD", "/");
    assert.equal(head.status, 200);
    assert.equal(head.text, "");
    assert.match(head.headers["content-type"], /^text\/html/);
    const postPage = await request(srv.port, "POST", "/", { body: {} });
    assert.equal(postPage.status, 405);
});

test("the Host allowlist applies to the pages as to the API", async () => {
    for (const path of ["/", "/dashboard", "/web/chat.js"]) {
        const r = await get(srv.port, path, { Host: "evil.example:8000" });
        assert.equal(r.status, 403, path);
        assert.equal((await get(srv.port, path, { Host: `localhost:${srv.port}` })).status, 200, path);
    }
});

test("each page with its scripts and style sheet weighs at most 150 KB", async () => {
    for (const path of Object.keys(PAGES)) {
        const html = (await get(srv.port, path)).text;
        let bytes = Buffer.byteLength(html);
        for (const m of html.matchAll(/(?:src|href)="(\/web\/[^"]+)"/g))
            bytes += Buffer.byteLength((await get(srv.port, m[1])).text);
        console.log(`page weight ${path}: ${bytes} bytes`);
        assert.ok(bytes <= 150 * 1024, `${path}: ${bytes} bytes`);
    }
});
