// Generation fuzz test for structured output (issue 19): a seeded generator
// writes random JSON Schemas over the subset src/grammar/json_schema.c
// supports; each one is sent to the real `splash serve` with sampling at
// temperature 1.5 and a fixed seed, on the demo model and on a random-weight
// model carrying the real Qwen3 vocabulary, with speculation off, with the
// n-gram drafter and with a draft model. Every complete output must parse and
// validate under ajv (strict mode off, ajv-formats for `format`); outputs cut
// off by max_tokens are counted on their own (they must still be a prefix of
// JSON text) and their rate is bounded; the same seeded request must give
// the same text in every arm (speculation never changes output).
//
//   node fuzz_generate.mjs --splash BIN --deps DIR --demo-model GGUF --demo-draft GGUF
//        [--vocab-model GGUF] [--schemas N per model] [--seed S] [--max-tokens N] [--concurrency N]
//        [--cutoff-max FRACTION] [--arms off,ngram,model] [--dump FILE] [--print-schemas N]
//
// Why Ajv2020 rather than the draft-07 Ajv class: prefixItems is a 2020-12
// keyword (draft-07 ajv would ignore it). ajv throws on `nullable` without
// `type`, so the generator only writes nullable beside a type.
import { existsSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { startServer, post, status, requireDeps } from "../server/lib.mjs";

const { values: argv } = parseArgs({
    options: {
        splash: { type: "string" },
        deps: { type: "string" },
        "demo-model": { type: "string" },
        "demo-draft": { type: "string" },
        "vocab-model": { type: "string" },
        "vocab-draft": { type: "string" },
        schemas: { type: "string", default: "300" },
        seed: { type: "string", default: "19" },
        "max-tokens": { type: "string", default: "256" },
        concurrency: { type: "string", default: "8" },
        "cutoff-max": { type: "string", default: "0.05" },
        arms: { type: "string", default: "off,ngram,model" },
        greedy: { type: "string", default: "16" },
        threads: { type: "string", default: "1" },
        dump: { type: "string" },
        "print-schemas": { type: "string", default: "0" },
    },
    strict: true,
});
if (!argv.splash || !argv.deps || !(argv["demo-model"] || argv["vocab-model"])) {
    console.error("usage: node fuzz_generate.mjs --splash BIN --deps DIR --demo-model GGUF --demo-draft GGUF [--vocab-model GGUF] ...");
    process.exit(2);
}
const N_SCHEMAS = Number(argv.schemas);
const SEED = Number(argv.seed) >>> 0;
const MAX_TOKENS = Number(argv["max-tokens"]);
const CONCURRENCY = Number(argv.concurrency);
const CUTOFF_MAX = Number(argv["cutoff-max"]);
const ARMS = argv.arms.split(",");
const N_GREEDY = Number(argv.greedy);

// ------------------------------------------------------------------ PRNG
// xoshiro128** seeded through splitmix32: our own, so the schema list is
// the same on every machine and node version.
function makeRng(seed) {
    let x = seed >>> 0;
    const split = () => {
        x = (x + 0x9e3779b9) >>> 0;
        let z = x;
        z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
        z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
        return (z ^ (z >>> 16)) >>> 0;
    };
    let s = [split(), split(), split(), split()];
    const rotl = (v, k) => ((v << k) | (v >>> (32 - k))) >>> 0;
    const next = () => {
        const r = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
        const t = (s[1] << 9) >>> 0;
        s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
        s[2] ^= t; s[3] = rotl(s[3], 11);
        s = s.map((v) => v >>> 0);
        return r;
    };
    const rng = {
        u32: next,
        float: () => next() / 4294967296,
        int: (lo, hi) => lo + Math.floor((next() / 4294967296) * (hi - lo + 1)), // inclusive
        chance: (p) => next() / 4294967296 < p,
        pick: (a) => a[Math.floor((next() / 4294967296) * a.length)],
        weighted: (pairs) => {
            let total = 0;
            for (const [w] of pairs) total += w;
            let r = (next() / 4294967296) * total;
            for (const [w, v] of pairs) if ((r -= w) < 0) return v;
            return pairs[pairs.length - 1][1];
        },
        shuffle: (a) => {
            for (let i = a.length - 1; i > 0; i--) {
                const j = Math.floor((next() / 4294967296) * (i + 1));
                [a[i], a[j]] = [a[j], a[i]];
            }
            return a;
        },
    };
    return rng;
}

// ------------------------------------------------------ schema generator
// Every schema it writes is in the supported subset (json_schema.c's opening
// comment): a refusal by the server is a bug to report, never skipped.
// Bounds stay modest (strings <= 16 characters, arrays <= 4 items) so outputs
// fit the token budget; a few unbounded strings, arrays and free-key objects
// are kept on purpose (the grammar must steer those toward closing too).
const KEYWORDS_SEEN = new Map(); // keyword -> count, for the coverage summary
function seen(k) { KEYWORDS_SEEN.set(k, (KEYWORDS_SEEN.get(k) ?? 0) + 1); }

const NAMES = ["id", "name", "title", "kind", "value", "count", "tags", "items", "when", "owner", "note",
    "price", "flag", "emma", "darcy", "bennet", "x", "y", "z", "data", "meta", "email", "日付", "naïve", "a b", "quo\"te"];
const ENUM_POOL = ["red", "green", "blue", "Mr. Darcy", "Elizabeth", "", "a\"b", "back\\slash", "tab\tin", "line\nbreak",
    "é", "日本", "😀", 0, 1, -7, 42, 3.5, -0.25, 1e21, true, false, null, [1, 2], { a: 1 }, ["x"], {}];

function genPattern(rng) {
    // anchored most of the time (an unanchored alternative admits any text around it)
    const atom = () => rng.weighted([
        [4, () => rng.pick(["a", "b", "x", "Z", "0", "7", "-", "_", "\\.", "@", "é"])],
        [5, () => rng.pick(["[a-z]", "[A-Z]", "[0-9]", "[a-f0-9]", "[A-Za-z_]", "[^,\\s]", "[xyz]", "[0-9.]"])],
        [3, () => rng.pick(["\\d", "\\w", "\\s", "\\D"])],
        [2, () => `(${rng.pick(["ab", "cd", "x"])}|${rng.pick(["ef", "y", "gh"])})`],
        [1, () => `(?:${rng.pick(["ab", "[0-9]", "\\w"])})`],
        [1, () => "."],
    ])();
    const quant = () => rng.weighted([
        [6, ""], [2, "?"], [3, `{${rng.int(1, 3)}}`], [3, `{${rng.int(0, 2)},${rng.int(2, 4)}}`],
        [1, "+"], [1, "*"], [1, "{1,}"], [1, "??"],
    ]);
    const seq = (n) => Array.from({ length: n }, () => atom() + quant()).join("");
    if (rng.chance(0.15)) return seq(rng.int(1, 2)).replace(/[+*]|\{1,\}/g, ""); // unanchored: free text around
    const alts = [seq(rng.int(1, 4))];
    if (rng.chance(0.2)) alts.push(seq(rng.int(1, 3)));
    if (alts.length > 1 && rng.chance(0.5)) return `^(?:${alts.join("|")})$`;
    return alts.map((alt) => `^${alt}$`).join("|");
}

function genString(rng, s) {
    const kind = rng.weighted([[5, "bounded"], [2, "pattern"], [2, "format"], [1, "free"]]);
    if (kind === "bounded") {
        const lo = rng.int(0, 3);
        if (rng.chance(0.5)) { s.minLength = lo; seen("minLength"); }
        s.maxLength = lo + rng.int(0, 12); seen("maxLength");
    } else if (kind === "pattern") {
        s.pattern = genPattern(rng); seen("pattern");
    } else if (kind === "format") {
        s.format = rng.pick(["date", "time", "date-time", "uuid", "email"]); seen("format"); seen(`format:${s.format}`);
    } else if (rng.chance(0.5)) {
        s.minLength = rng.int(0, 2); seen("minLength"); // no maxLength: a free string
    }
    return s;
}

function genInteger(rng, s) {
    const lo = rng.int(-1000, 1000), hi = lo + rng.int(0, 2000);
    const which = rng.weighted([[2, "none"], [3, "both"], [2, "min"], [2, "max"], [2, "exclusive"]]);
    if (which === "both") { s.minimum = lo; s.maximum = hi; seen("minimum"); seen("maximum"); }
    else if (which === "min") { s.minimum = lo; seen("minimum"); }
    else if (which === "max") { s.maximum = hi; seen("maximum"); }
    else if (which === "exclusive") {
        if (rng.chance(0.7)) { s.exclusiveMinimum = lo - 1; seen("exclusiveMinimum"); }
        if (rng.chance(0.7)) { s.exclusiveMaximum = hi + 1; seen("exclusiveMaximum"); }
        if (rng.chance(0.3)) { s.minimum = lo; seen("minimum"); }
    }
    return s;
}

function typed(rng, t, s = {}) {
    s.type = t; seen("type");
    if (t !== "null" && rng.chance(0.12)) { s.nullable = true; seen("nullable"); }
    return s;
}

function genLeaf(rng) {
    const t = rng.weighted([[6, "string"], [4, "integer"], [2, "number"], [2, "boolean"], [1, "null"],
        [2, "enum"], [2, "const"], [2, "multi"]]);
    if (t === "string") return genString(rng, typed(rng, "string"));
    if (t === "integer") return genInteger(rng, typed(rng, "integer"));
    if (t === "number" || t === "boolean" || t === "null") return typed(rng, t);
    if (t === "enum") {
        const vals = [];
        const n = rng.int(1, 5);
        while (vals.length < n) {
            const v = rng.pick(ENUM_POOL);
            if (!vals.some((w) => JSON.stringify(w) === JSON.stringify(v))) vals.push(v);
        }
        seen("enum");
        return { enum: vals };
    }
    if (t === "const") { seen("const"); return { const: rng.pick(ENUM_POOL) }; }
    // a type array over scalars, the string and integer keywords applying to their part
    const types = rng.shuffle(["string", "integer", "boolean", "null", "number"]).slice(0, rng.int(2, 3));
    if (types.includes("number") && types.includes("integer")) types.splice(types.indexOf("number"), 1);
    const s = { type: types }; seen("type"); seen("type[]");
    if (types.includes("string")) { s.maxLength = rng.int(1, 10); seen("maxLength"); }
    if (types.includes("integer") && !types.includes("number") && rng.chance(0.5)) {
        s.minimum = rng.int(-50, 0); s.maximum = rng.int(0, 50); seen("minimum"); seen("maximum");
    }
    return s;
}

// ctx: {defs, depth, maxDepth, names}: defs is the root's $defs, shared.
function genSchema(rng, ctx, depth) {
    if (depth >= ctx.maxDepth) return genLeaf(rng);
    const kind = rng.weighted([[6, "leaf"], [5, "object"], [3, "array"], [1, "tuple"], [2, "anyOf"], [2, "oneOf"],
        [1, "allOf"], [2, "ref"], [1, "multiContainer"]]);
    switch (kind) {
        case "leaf": return genLeaf(rng);
        case "object": return genObject(rng, ctx, depth);
        case "array": return genArray(rng, ctx, depth);
        case "tuple": return genTuple(rng, ctx, depth);
        case "anyOf": {
            seen("anyOf");
            return { anyOf: Array.from({ length: rng.int(2, 3) }, () => genSchema(rng, ctx, depth + 1)) };
        }
        case "oneOf": return genOneOf(rng, ctx, depth);
        case "allOf": return genAllOf(rng, ctx, depth);
        case "ref": return genRef(rng, ctx, depth);
        case "multiContainer": {
            // ["object","null"] or ["array","null"]: container keywords beside a type array
            if (rng.chance(0.5)) { const s = genObject(rng, ctx, depth); s.type = ["object", "null"]; seen("type[]"); return s; }
            const s = genArray(rng, ctx, depth); s.type = ["array", "null"]; seen("type[]"); return s;
        }
    }
    throw new Error(kind);
}

function propNames(rng, n) {
    return rng.shuffle(NAMES.slice()).slice(0, n);
}

function genObject(rng, ctx, depth, { noAdditionalFalse = false, noAdditionalSchema = false, names } = {}) {
    const s = typed(rng, "object");
    const keys = names ?? propNames(rng, rng.int(0, 4));
    if (keys.length > 0 || rng.chance(0.5)) {
        s.properties = {}; seen("properties");
        for (const k of keys) s.properties[k] = genSchema(rng, ctx, depth + 1);
        const req = keys.filter(() => rng.chance(0.6));
        if (req.length > 0 || rng.chance(0.3)) { s.required = req; seen("required"); }
    }
    const add = rng.weighted([[6, "absent"], [4, "false"], [1, "true"], [1, "schema"]]);
    if (add === "false" && !noAdditionalFalse) { s.additionalProperties = false; seen("additionalProperties:false"); }
    else if (add === "true") { s.additionalProperties = true; seen("additionalProperties:true"); }
    else if (add === "schema" && !noAdditionalSchema) {
        s.additionalProperties = genLeaf(rng); seen("additionalProperties:schema");
    }
    return s;
}

function genArray(rng, ctx, depth) {
    const s = typed(rng, "array");
    s.items = genSchema(rng, ctx, depth + 1); seen("items");
    const lo = rng.int(0, 2);
    if (rng.chance(0.5)) { s.minItems = lo; seen("minItems"); }
    if (rng.chance(0.85)) { s.maxItems = lo + rng.int(0, 2); seen("maxItems"); }
    return s;
}

function genTuple(rng, ctx, depth) {
    const s = typed(rng, "array");
    const n = rng.int(1, 3);
    s.prefixItems = Array.from({ length: n }, () => genSchema(rng, ctx, depth + 1)); seen("prefixItems");
    const tail = rng.weighted([[3, "false"], [2, "schema"], [1, "absent"]]);
    if (tail === "false") { s.items = false; seen("items:false"); }
    else if (tail === "schema") { s.items = genLeaf(rng); seen("items"); }
    if (tail !== "false" || rng.chance(0.3)) {
        if (rng.chance(0.6)) { s.minItems = rng.int(0, n); seen("minItems"); }
        s.maxItems = n + rng.int(0, 2); seen("maxItems");
    }
    return s;
}

// oneOf compiles as anyOf, so the branches are made mutually exclusive: distinct
// type families, or objects told apart by a required const discriminator.
function genOneOf(rng, ctx, depth) {
    seen("oneOf");
    if (rng.chance(0.5)) {
        const n = rng.int(2, 3);
        const branches = [];
        for (let i = 0; i < n; i++) {
            const b = genObject(rng, ctx, depth + 1, { names: propNames(rng, rng.int(0, 2)).filter((k) => k !== "kind") });
            b.properties ??= {};
            b.properties = { kind: { const: `k${i}` }, ...b.properties }; seen("const");
            b.required = ["kind", ...(b.required ?? []).filter((k) => k !== "kind")]; seen("required");
            branches.push(b);
        }
        return { oneOf: branches };
    }
    const families = rng.shuffle(["string", "integer", "boolean", "null", "object", "array"]).slice(0, rng.int(2, 3));
    return {
        oneOf: families.map((f) => {
            if (f === "string") return genString(rng, { type: "string" });
            if (f === "integer") return genInteger(rng, { type: "integer" });
            if (f === "boolean" || f === "null") return { type: f };
            if (f === "object") { const o = genObject(rng, ctx, depth + 1); delete o.nullable; return o; }
            const a = genArray(rng, ctx, depth + 1); delete a.nullable; return a;
        }),
    };
}

// allOf of object schemas with disjoint property names; a member's
// additionalProperties may be absent or true (false would forbid the other
// member's properties, a schema there is refused: both outside the subset).
function genAllOf(rng, ctx, depth) {
    seen("allOf");
    const keys = propNames(rng, rng.int(2, 4));
    const cut = rng.int(1, keys.length - 1);
    const members = [keys.slice(0, cut), keys.slice(cut)].map((names) => {
        const m = genObject(rng, ctx, depth + 1, { noAdditionalFalse: true, noAdditionalSchema: true, names });
        delete m.nullable;
        if (rng.chance(0.3)) delete m.type;
        return m;
    });
    if (rng.chance(0.4)) {
        // one member through $ref to a definition
        const name = `base${Object.keys(ctx.defs).length}`;
        ctx.defs[name] = members[0];
        members[0] = { $ref: `#/$defs/${name}` }; seen("$ref"); seen("$defs");
    }
    return { allOf: members };
}

function genRef(rng, ctx, depth) {
    seen("$ref");
    if (rng.chance(0.35)) {
        // a recursive definition, kept finite: children are optional and bounded
        seen("$ref:recursive");
        if (!ctx.defs.node) {
            ctx.defs.node = {
                type: "object",
                properties: {
                    label: genLeaf(rng),
                    children: { type: "array", items: { $ref: "#/$defs/node" }, maxItems: rng.int(1, 2) },
                },
                required: ["label"],
            };
            seen("$defs");
        }
        return { $ref: "#/$defs/node" };
    }
    const useLegacy = rng.chance(0.2);
    const store = useLegacy ? (ctx.definitions ??= {}) : ctx.defs;
    const name = `d${Object.keys(store).length}`;
    store[name] = true; // reserved before the recursion names its own
    store[name] = genSchema(rng, ctx, depth + 1);
    seen(useLegacy ? "definitions" : "$defs");
    return { $ref: useLegacy ? `#/definitions/${name}` : `#/$defs/${name}` };
}

function genRoot(rng) {
    const ctx = { defs: {}, maxDepth: rng.int(1, 4) };
    let s = rng.chance(0.7) ? genObject(rng, ctx, 0) : genSchema(rng, ctx, 0);
    if (Object.keys(ctx.defs).length || ctx.definitions) {
        s = { ...s };
        if (Object.keys(ctx.defs).length) s.$defs = ctx.defs;
        if (ctx.definitions) s.definitions = ctx.definitions;
    }
    return s;
}

// ------------------------------------------------------ JSON prefix check
// A cut-off output must be a prefix of some JSON text: this parser accepts
// text that ends anywhere inside a value, and throws on anything else.
class Eof extends Error {}
function checkJsonPrefix(text) {
    let i = 0;
    const peek = () => { if (i >= text.length) throw new Eof(); return text[i]; };
    const expect = (lit) => { for (const ch of lit) { if (peek() !== ch) throw new Error(`at ${i}: expected ${lit}`); i++; } };
    const ws = () => { while (i < text.length && " \t\n\r".includes(text[i])) i++; };
    const value = () => {
        ws();
        const c = peek();
        if (c === "{") {
            i++; ws();
            if (peek() === "}") { i++; return; }
            for (;;) { ws(); if (peek() !== "\"") throw new Error(`at ${i}: key`); string(); ws(); expect(":"); value(); ws();
                const d = peek(); i++; if (d === "}") return; if (d !== ",") throw new Error(`at ${i - 1}: , or }`); }
        }
        if (c === "[") {
            i++; ws();
            if (peek() === "]") { i++; return; }
            for (;;) { value(); ws(); const d = peek(); i++; if (d === "]") return; if (d !== ",") throw new Error(`at ${i - 1}: , or ]`); }
        }
        if (c === "\"") return string();
        if (c === "t") return expect("true");
        if (c === "f") return expect("false");
        if (c === "n") return expect("null");
        if (c === "-" || (c >= "0" && c <= "9")) { const m = /^-?(0|[1-9]\d*)?(\.\d*)?([eE][+-]?\d*)?/.exec(text.slice(i)); i += m[0].length; if (i >= text.length) throw new Eof(); return; }
        throw new Error(`at ${i}: unexpected ${JSON.stringify(c)}`);
    };
    const string = () => {
        i++;
        for (;;) {
            const c = peek(); i++;
            if (c === "\"") return;
            if (c < " ") throw new Error(`at ${i - 1}: raw control character`);
            if (c === "\\") { const e = peek(); i++; if (e === "u") { for (let k = 0; k < 4; k++) { if (!/[0-9a-fA-F]/.test(peek())) throw new Error("bad \\u"); i++; } } else if (!"\"\\/bfnrt".includes(e)) throw new Error(`bad escape \\${e}`); }
        }
    };
    try { value(); ws(); } catch (e) { if (e instanceof Eof) return null; return e.message; }
    return i < text.length ? `a complete value then ${JSON.stringify(text.slice(i, i + 20))}` : null;
}

// ------------------------------------------------------------- the runs
const require = requireDeps(argv.deps);
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats").default ?? require("ajv-formats");
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);

// Each model gets its own N schemas (seeds SEED and SEED+1), the same in every arm.
function makeCases(seed) {
    const rng = makeRng(seed);
    const cases = [];
    for (let i = 0; i < N_SCHEMAS; i++) {
        const schema = genRoot(rng);
        const endpoint = i % 10 === 9 ? "completions" : "chat";
        cases.push({ i, schema, endpoint, seed: rng.u32(), temperature: i < N_GREEDY ? 0 : 1.5 });
    }
    for (let i = 0; i < Math.min(N_SCHEMAS, Number(argv["print-schemas"])); i++) console.log(JSON.stringify(cases[i].schema));
    for (const c of cases) {
        try { c.validate = ajv.compile(c.schema); } catch (e) {
            throw new Error(`ajv refuses generated schema ${c.i}: ${e.message}\n${JSON.stringify(c.schema)}`);
        }
    }
    return cases;
}

const models = [];
if (argv["demo-model"]) models.push({ name: "demo", file: argv["demo-model"], draft: argv["demo-draft"] });
if (argv["vocab-model"]) models.push({ name: "qwen3-vocab", file: argv["vocab-model"], draft: argv["vocab-draft"] ?? argv["vocab-model"] });
for (const m of models) {
    if (!existsSync(m.file)) throw new Error(`no model ${m.file}`);
    if (ARMS.includes("model") && !(m.draft && existsSync(m.draft))) throw new Error(`no draft model for ${m.name}: ${m.draft}`);
}

const failures = [];
const cutoffs = []; // outputs that max_tokens ended, for --dump
const rows = [];
const t0 = Date.now();
let salt = 0;

function body(c, modelId) {
    const common = {
        model: modelId, temperature: c.temperature, seed: c.seed, max_tokens: MAX_TOKENS,
        cache_salt: `fuzz-${SEED}-${salt++}`,
        response_format: { type: "json_schema", json_schema: { name: `fuzz_${c.i}`, schema: c.schema, strict: true } },
    };
    if (c.endpoint === "completions") return { ...common, prompt: "Here is the record, as JSON:\n" };
    return {
        ...common, chat_template_kwargs: { enable_thinking: false },
        messages: [{ role: "user", content: "Reply with one JSON value for the record." }],
    };
}

async function runArm(model, arm, cases) {
    const args = ["--threads", argv.threads];
    if (arm === "ngram") args.push("--draft", "ngram");
    if (arm === "model") args.push("--draft", model.draft);
    const server = await startServer({ splash: argv.splash, model: model.file }, args);
    const outs = new Array(cases.length);
    const row = { model: model.name, arm, requests: 0, valid: 0, invalid: 0, cutoffs: 0, errors: 0 };
    let next = 0;
    const worker = async () => {
        while (next < cases.length) {
            const c = cases[next++];
            const path = c.endpoint === "chat" ? "/v1/chat/completions" : "/v1/completions";
            let r;
            try { r = await post(server.port, path, body(c, server.modelId)); } catch (e) {
                row.errors++; failures.push({ model: model.name, arm, i: c.i, why: `request failed: ${e.message}`, schema: c.schema });
                continue;
            }
            row.requests++;
            if (r.status !== 200) {
                row.errors++;
                failures.push({ model: model.name, arm, i: c.i, why: `HTTP ${r.status}: ${r.text.slice(0, 400)}`, schema: c.schema });
                continue;
            }
            const ch = r.json.choices[0];
            const text = c.endpoint === "chat" ? (ch.message.content ?? "") : ch.text;
            outs[c.i] = { text, finish: ch.finish_reason };
            if (ch.finish_reason === "length") {
                row.cutoffs++;
                cutoffs.push({ model: model.name, arm, i: c.i, text, schema: c.schema });
                const bad = checkJsonPrefix(text);
                if (bad) { row.invalid++; failures.push({ model: model.name, arm, i: c.i, why: `cut-off output is not a JSON prefix (${bad})`, text, schema: c.schema }); }
                continue;
            }
            let value;
            try { value = JSON.parse(text); } catch (e) {
                row.invalid++;
                failures.push({ model: model.name, arm, i: c.i, why: `JSON.parse: ${e.message} (finish ${ch.finish_reason})`, text, schema: c.schema });
                continue;
            }
            if (c.validate(value)) row.valid++;
            else {
                row.invalid++;
                failures.push({ model: model.name, arm, i: c.i, why: `ajv: ${JSON.stringify(c.validate.errors)}`, text, schema: c.schema });
            }
        }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const st = await status(server.port);
    const g = st.grammar ?? {};
    row.masks = g.masks; row.forced = g.forced_tokens; row.drafts_cut = g.drafts_cut;
    row.mask_ns_per_token = g.mask_ns_per_token;
    row.drafted = st.spec?.drafted; row.accepted = st.spec?.accepted;
    const code = await server.stop();
    if (code !== 0) failures.push({ model: model.name, arm, why: `splash serve exited with ${code}\n${server.stderr().slice(-2000)}` });
    rows.push(row);
    return outs;
}

for (const [k, model] of models.entries()) {
    const cases = makeCases((SEED + k) >>> 0);
    const byArm = {};
    for (const arm of ARMS) {
        const t = Date.now();
        byArm[arm] = await runArm(model, arm, cases);
        console.log(`# ${model.name} / ${arm}: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
    // speculation never changes output: every seeded request, every arm
    const base = ARMS[0];
    for (const arm of ARMS.slice(1)) {
        let diffs = 0;
        for (const c of cases) {
            const a = byArm[base][c.i], b = byArm[arm][c.i];
            if (!a || !b) continue;
            if (a.text !== b.text || a.finish !== b.finish) {
                diffs++;
                failures.push({ model: model.name, arm, i: c.i, why: `output differs from arm ${base}`, text: b.text, base: a.text, schema: c.schema, temperature: c.temperature });
            }
        }
        console.log(`# ${model.name}: ${arm} vs ${base}: ${diffs} of ${cases.length} outputs differ`);
    }
}

// ------------------------------------------------------------- summary
const pct = (a, b) => (b ? ((100 * a) / b).toFixed(1) + " %" : "-");
console.log(`\nschemas ${N_SCHEMAS} per model (seeds ${SEED}.., ${N_GREEDY} greedy each), max_tokens ${MAX_TOKENS}, ${((Date.now() - t0) / 1000).toFixed(1)} s`);
console.log("model        arm    requests  valid  invalid  errors  cut-offs (rate)   forced  drafts_cut  drafted/accepted  mask ns/token");
for (const r of rows) {
    console.log(`${r.model.padEnd(12)} ${r.arm.padEnd(6)} ${String(r.requests).padStart(8)} ${String(r.valid).padStart(6)} ` +
        `${String(r.invalid).padStart(8)} ${String(r.errors).padStart(7)}  ${String(r.cutoffs).padStart(4)} (${pct(r.cutoffs, r.requests).padStart(7)})` +
        `  ${String(r.forced).padStart(7)} ${String(r.drafts_cut).padStart(11)}  ${`${r.drafted ?? "-"}/${r.accepted ?? "-"}`.padStart(16)}` +
        `  ${r.mask_ns_per_token !== undefined ? r.mask_ns_per_token.toFixed(0) : "-"}`);
    if (r.requests && r.cutoffs / r.requests > CUTOFF_MAX)
        failures.push({ model: r.model, arm: r.arm, why: `cut-off rate ${pct(r.cutoffs, r.requests)} above ${pct(CUTOFF_MAX, 1)}` });
}
console.log("keyword coverage: " + [...KEYWORDS_SEEN.entries()].sort().map(([k, n]) => `${k} ${n}`).join(", "));
if (argv.dump) writeFileSync(argv.dump, JSON.stringify({ failures, cutoffs }, null, 1));
if (failures.length) {
    console.log(`\nFAIL: ${failures.length} problem(s); the first ones:`);
    for (const f of failures.slice(0, 12)) {
        console.log(`- ${f.model}${f.arm ? "/" + f.arm : ""}${f.i !== undefined ? " schema " + f.i : ""}: ${f.why}`);
        if (f.schema) console.log(`  schema: ${JSON.stringify(f.schema)}`);
        if (f.text !== undefined) console.log(`  output: ${JSON.stringify(f.text)}`);
        if (f.base !== undefined) console.log(`  ${ARMS[0]} arm: ${JSON.stringify(f.base)}`);
    }
    process.exit(1);
}
console.log("OK");
