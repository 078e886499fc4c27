// Runs splash's tokenizer, detokenizer and chat template over the reference
// inputs and compares every output exactly with the JavaScript references.
//
//   node compare.mjs --splash BIN --model M.gguf --ref reference.json --part PART
//                    [--deps DIR] [--report FILE] [--divergences FILE] [--max-shown N]
//   node compare.mjs --self-check --ref reference.json [--deps DIR]
//
// PART (repeatable, or "all"):
//   tokenize          (a) ids of every corpus string, special-token text parsed
//   no-parse-special  (c) ids with --no-parse-special (see reference.mjs for the semantics)
//   detokenize        (b) splash detokenize of the reference ids == HF decode; of
//                     splash's own ids == the input (NFC between added tokens);
//                     invalid UTF-8 id sequences == HF decode (U+FFFD placement)
//   template          (d) every conversation rendered byte-identically
//
// Nothing is loosened: a difference fails the run unless the exact (input,
// reference output, splash output) triple is listed, with a reason, in
// known_reference_divergences.json; those are reported in their own list.
// An entry that no longer occurs fails the run too, so the list stays true.
// Entry format: {"part": "tokenize" | "no-parse-special" | "detokenize" |
// "roundtrip" | "template", "input": <the string, id list or conversation>,
// "reference": <JS output>, "splash": <splash output>, "reason": "why the
// JS reference, not splash, departs from HF Python here"}.
// --self-check proves the comparison itself can fail: corrupted copies of the
// reference answers must all be caught.

import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { depsDir, loadDeps } from "./deps.mjs";
import { expectedRoundTrip } from "./reference.mjs";
import { ADDED_TOKENS } from "./corpus.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PARTS = ["tokenize", "no-parse-special", "detokenize", "template"];
const RUN_TIMEOUT_MS = 15 * 60 * 1000; // an ASan build over the whole corpus stays far below this

function parseArgs(argv) {
    const a = { splash: null, model: null, ref: null, deps: undefined, parts: [], report: null, maxShown: 40, selfCheck: false,
        divergences: path.join(HERE, "known_reference_divergences.json") };
    for (let i = 0; i < argv.length; i++) {
        const v = () => {
            if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value`);
            return argv[++i];
        };
        switch (argv[i]) {
            case "--splash": a.splash = v(); break;
            case "--model": a.model = v(); break;
            case "--ref": a.ref = v(); break;
            case "--deps": a.deps = v(); break;
            case "--part": { const p = v(); a.parts.push(...(p === "all" ? PARTS : [p])); break; }
            case "--report": a.report = v(); break;
            case "--divergences": a.divergences = v(); break;
            case "--max-shown": a.maxShown = Number(v()); break;
            case "--self-check": a.selfCheck = true; break;
            default: throw new Error(`unknown argument '${argv[i]}'`);
        }
    }
    for (const p of a.parts) if (!PARTS.includes(p)) throw new Error(`unknown part '${p}' (${PARTS.join(", ")}, all)`);
    if (!a.ref) throw new Error("--ref reference.json is required");
    if (!a.selfCheck) {
        if (!a.splash || !a.model) throw new Error("--splash BIN and --model M.gguf are required");
        if (!a.parts.length) a.parts = PARTS.slice();
    }
    return a;
}

// ---------------------------------------------------------------- running splash

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

// Feeds lines on stdin, returns one parsed JSON value per output line. The
// output must be valid UTF-8: raw invalid bytes are an error in themselves,
// not something to let Node's decoder paper over with U+FFFD.
function runSplash(bin, args, lines) {
    const input = lines.length ? lines.join("\n") + "\n" : "";
    const r = spawnSync(bin, args, { input, maxBuffer: 1 << 30, timeout: RUN_TIMEOUT_MS });
    const cmd = `${bin} ${args.join(" ")}`;
    if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
    if (r.status !== 0) throw new Error(`${cmd} exited ${r.status ?? r.signal}: ${r.stderr.toString().slice(-2000)}`);
    let text;
    try {
        text = strictUtf8.decode(r.stdout);
    } catch {
        throw new Error(`${cmd}: stdout is not valid UTF-8`);
    }
    const out = text.split("\n");
    if (out[out.length - 1] === "") out.pop();
    if (out.length !== lines.length) throw new Error(`${cmd}: ${out.length} output lines for ${lines.length} input lines`);
    return out.map((line, i) => {
        try {
            return JSON.parse(line);
        } catch {
            throw new Error(`${cmd}: output line ${i + 1} is not JSON: ${line.slice(0, 200)}`);
        }
    });
}

function checkCommand(bin, sub) {
    const r = spawnSync(bin, [sub, "--help"], { encoding: "utf8" });
    if (r.error || r.status !== 0) {
        throw new Error(`'${bin} ${sub} --help' failed (${r.error?.message ?? `exit ${r.status}`}): this splash has no '${sub}' command yet`);
    }
}

// ---------------------------------------------------------------- comparing

const sameJson = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function firstDiffIds(a, b) {
    if (!Array.isArray(a) || !Array.isArray(b)) return 0;
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
    return a.length === b.length ? -1 : n;
}

// First differing position, in UTF-16 units and in UTF-8 bytes.
function firstDiffText(a, b) {
    if (typeof a !== "string" || typeof b !== "string") return { index: 0, byte: 0 };
    const n = Math.min(a.length, b.length);
    let i = 0;
    while (i < n && a[i] === b[i]) i++;
    if (i === a.length && i === b.length) return null;
    return { index: i, byte: Buffer.byteLength(a.slice(0, i)) };
}

function loadDivergences(file) {
    if (!existsSync(file)) return [];
    const text = readFileSync(file, "utf8").trim();
    const list = text ? JSON.parse(text) : [];
    if (!Array.isArray(list)) throw new Error(`${file}: must hold a JSON array`);
    for (const [i, d] of list.entries()) {
        for (const k of ["part", "input", "reference", "splash", "reason"]) {
            if (!(k in d)) throw new Error(`${file}: entry ${i} lacks "${k}"`);
        }
        if (typeof d.reason !== "string" || d.reason.trim().length < 20) throw new Error(`${file}: entry ${i} needs a written reason`);
    }
    return list;
}

// One part's tally: identical, mismatches, known divergences, and the
// divergence entries of this part that did not occur as listed (stale).
class Tally {
    constructor(part, divergences) {
        this.part = part;
        this.total = 0;
        this.identical = 0;
        this.mismatches = [];
        this.known = [];
        this.divergences = divergences.filter((d) => d.part === part);
        this.used = new Set();
    }
    add(label, input, reference, splash, detail) {
        this.total++;
        if (sameJson(reference, splash)) {
            this.identical++;
            return;
        }
        const d = this.divergences.findIndex((x) => sameJson(x.input, input) && sameJson(x.reference, reference) && sameJson(x.splash, splash));
        if (d >= 0) {
            this.used.add(d);
            this.known.push({ label, input, reference, splash, reason: this.divergences[d].reason });
            return;
        }
        this.mismatches.push({ label, input, reference, splash, ...detail(reference, splash) });
    }
    stale() {
        return this.divergences.filter((_, i) => !this.used.has(i));
    }
}

// JSON with every invisible or easily confused code point escaped (controls,
// format characters, separators other than the space, combining marks,
// private use, U+FFFD), so a report line shows exactly what the input was.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Z}\p{M}\p{Co}\p{Cn}\uFFFD]/gu;
export function showJson(value) {
    const hex = (u) => `\\u${u.toString(16).toUpperCase().padStart(4, "0")}`;
    return JSON.stringify(value).replace(INVISIBLE, (c) => (c === " " ? c
        : c.length === 2 ? hex(c.charCodeAt(0)) + hex(c.charCodeAt(1)) : hex(c.charCodeAt(0))));
}

function fmtIds(ids, at, tokenOf) {
    if (!Array.isArray(ids)) return JSON.stringify(ids);
    const lo = Math.max(0, at - 8), hi = Math.min(ids.length, at + 12);
    const win = ids.slice(lo, hi).map((id) => `${id}${tokenOf ? `:${showJson(tokenOf(id))}` : ""}`);
    return `${ids.length} ids${lo > 0 ? ` [..${lo} before]` : ""} [${win.join(", ")}]${hi < ids.length ? ` [..${ids.length - hi} after]` : ""}`;
}

function fmtText(s, at) {
    if (typeof s !== "string" || s.length <= 400) return showJson(s);
    const lo = Math.max(0, at - 150);
    return `(${s.length} chars) ${lo > 0 ? "..." : ""}${showJson(s.slice(lo, at + 150))}...`;
}

function fmtInput(input) {
    const s = showJson(input);
    return s.length <= 600 ? s : `${s.slice(0, 600)}... (${s.length} chars of JSON)`;
}

function printTally(t, maxShown, tokenOf) {
    const stale = t.stale();
    const status = t.mismatches.length === 0 && stale.length === 0 ? "ok" : "FAIL";
    console.log(`${t.part}: ${t.identical}/${t.total} identical, ${t.known.length} known reference divergences, ` +
        `${t.mismatches.length} mismatches${stale.length ? `, ${stale.length} stale divergence entries` : ""} [${status}]`);
    for (const m of t.mismatches.slice(0, maxShown)) {
        console.log(`  MISMATCH ${m.label}`);
        console.log(`    input:     ${fmtInput(m.input)}`);
        if (m.kind === "ids") {
            console.log(`    first difference at id index ${m.at}`);
            console.log(`    reference: ${fmtIds(m.reference, m.at, tokenOf)}`);
            console.log(`    splash:    ${fmtIds(m.splash, m.at, tokenOf)}`);
        } else {
            console.log(`    first difference at char ${m.at?.index} (byte ${m.at?.byte})`);
            console.log(`    reference: ${fmtText(m.reference, m.at?.index ?? 0)}`);
            console.log(`    splash:    ${fmtText(m.splash, m.at?.index ?? 0)}`);
        }
        if (m.note) console.log(`    note:      ${m.note}`);
    }
    if (t.mismatches.length > maxShown) console.log(`  ... ${t.mismatches.length - maxShown} more mismatches (all of them in the --report file)`);
    for (const k of t.known) console.log(`  known divergence ${k.label}: ${fmtInput(k.input)} (${k.reason})`);
    for (const s of stale) console.log(`  STALE divergence entry (no longer occurs as listed): ${fmtInput(s.input)}`);
    return status === "ok";
}

const idsDetail = (note) => (ref, got) => ({ kind: "ids", at: firstDiffIds(ref, got), note: note?.(ref, got) });
const textDetail = (ref, got) => ({ kind: "text", at: firstDiffText(ref, got) });

// ---------------------------------------------------------------- the parts

function partTokenize(a, ref, divs) {
    const t = new Tally("tokenize", divs);
    const out = runSplash(a.splash, ["tokenize", "--model", a.model, "--jsonl"], ref.tokenize.map((e) => JSON.stringify(e.text)));
    ref.tokenize.forEach((e, i) => t.add(`#${i} (${e.cat})`, e.text, e.ids, out[i], idsDetail()));
    return { tally: t, splashIds: out };
}

function partNoParseSpecial(a, ref, divs) {
    const t = new Tally("no-parse-special", divs);
    const out = runSplash(a.splash, ["tokenize", "--model", a.model, "--jsonl", "--no-parse-special"], ref.no_parse_special.map((e) => JSON.stringify(e.text)));
    const note = (e) => (r, g) => (sameJson(g, e.ids_all_added_plain)
        ? "splash treats ALL 26 added tokens as text; HF (split_special_tokens=True) only the 13 special ones, <think>/<tool_call>/... stay tokens" : undefined);
    ref.no_parse_special.forEach((e, i) => t.add(`#${i}`, e.text, e.ids, out[i], idsDetail(note(e))));
    return { tally: t };
}

function partDetokenize(a, ref, divs) {
    // (b1) the reference ids, decoded: exactly HF's decode.
    const t1 = new Tally("detokenize", divs);
    const corpusOut = runSplash(a.splash, ["detokenize", "--model", a.model, "--jsonl"], ref.tokenize.map((e) => JSON.stringify(e.ids)));
    ref.tokenize.forEach((e, i) => t1.add(`corpus #${i} (${e.cat})`, e.ids, e.decoded, corpusOut[i], textDetail));
    // (b3) invalid UTF-8 and other id sequences.
    const casesOut = runSplash(a.splash, ["detokenize", "--model", a.model, "--jsonl"], ref.detokenize.map((e) => JSON.stringify(e.ids)));
    ref.detokenize.forEach((e, i) => t1.add(e.name, e.ids, e.text, casesOut[i], textDetail));
    // (b2) splash's own round trip: decode(encode(s)) == s, NFC between added tokens.
    const t2 = new Tally("roundtrip", divs);
    const ids = runSplash(a.splash, ["tokenize", "--model", a.model, "--jsonl"], ref.tokenize.map((e) => JSON.stringify(e.text)));
    const back = runSplash(a.splash, ["detokenize", "--model", a.model, "--jsonl"], ids.map((x) => JSON.stringify(Array.isArray(x) ? x : [])));
    ref.tokenize.forEach((e, i) => t2.add(`corpus #${i} (${e.cat})`, e.text, expectedRoundTrip(e.text, ADDED_TOKENS), back[i], textDetail));
    return { tallies: [t1, t2] };
}

function partTemplate(a, ref, divs) {
    const t = new Tally("template", divs);
    const out = runSplash(a.splash, ["template", "--model", a.model, "--jsonl"], ref.template.map((e) => JSON.stringify(e.input)));
    ref.template.forEach((e, i) => t.add(e.name, e.input, "error" in e ? { error: "(any)" } : e.text,
        "error" in e && out[i] && typeof out[i] === "object" && "error" in out[i] ? { error: "(any)" } : out[i], textDetail));
    return { tally: t };
}

// ---------------------------------------------------------------- self-check

// The comparison must catch every kind of difference it exists for.
function selfCheck(ref) {
    const divs = [];
    let caught = 0, cases = 0;
    const expectFail = (what, mutate) => {
        cases++;
        const t = new Tally("tokenize", divs);
        const e = ref.tokenize.find((x) => x.ids.length > 3);
        const got = mutate(structuredClone(e.ids));
        t.add("self", e.text, e.ids, got, idsDetail());
        if (t.mismatches.length === 1) caught++;
        else console.log(`self-check: NOT caught: ${what}`);
    };
    expectFail("one id changed", (ids) => { ids[2] += 1; return ids; });
    expectFail("one id dropped", (ids) => ids.slice(0, -1));
    expectFail("one id added", (ids) => [...ids, 0]);
    expectFail("two ids swapped", (ids) => { [ids[0], ids[1]] = [ids[1], ids[0]]; return ids; });
    expectFail("ids as strings", (ids) => ids.map(String));
    const expectTextFail = (what, refText, got) => {
        cases++;
        const t = new Tally("template", divs);
        t.add("self", { messages: [] }, refText, got, textDetail);
        if (t.mismatches.length === 1 && (t.mismatches[0].at !== null)) caught++;
        else console.log(`self-check: NOT caught: ${what}`);
    };
    const conv = ref.template[0].text;
    expectTextFail("trailing newline lost", conv, conv.replace(/\n$/, ""));
    expectTextFail("one byte changed", conv, conv.replace("user", "usEr"));
    expectTextFail("U+FFFD vs ?", "a\uFFFDb", "a?b");
    expectTextFail("NFC vs NFD", "\u00E9", "e\u0301");
    expectTextFail("error object instead of text", conv, { error: "x" });
    // An identical answer passes, and a listed divergence is accepted only
    // with both outputs exactly as listed.
    cases++;
    const t = new Tally("tokenize", [{ part: "tokenize", input: "x", reference: [1], splash: [2], reason: "self-check entry, long enough reason" }]);
    t.add("same", "y", [5], [5], idsDetail());
    t.add("listed", "x", [1], [2], idsDetail());
    t.add("listed but different output", "x", [1], [3], idsDetail());
    const unused = new Tally("tokenize", [{ part: "tokenize", input: "z", reference: [1], splash: [2], reason: "self-check entry, long enough reason" }]);
    unused.add("z now identical", "z", [1], [1], idsDetail());
    if (t.identical === 1 && t.known.length === 1 && t.mismatches.length === 1 && t.stale().length === 0 && unused.stale().length === 1) caught++;
    else console.log("self-check: divergence list handling is wrong");
    console.log(`self-check: ${caught}/${cases} corruptions caught`);
    return caught === cases;
}

// ---------------------------------------------------------------- main

function main() {
    const a = parseArgs(process.argv.slice(2));
    const ref = JSON.parse(readFileSync(a.ref, "utf8"));
    if (a.selfCheck) process.exit(selfCheck(ref) ? 0 : 1);

    let tokenOf = null;
    try {
        const deps = loadDeps(depsDir(a.deps));
        const vocab = deps.tokenizerJson.model.vocab;
        const inv = [];
        for (const [k, v] of Object.entries(vocab)) inv[v] = k;
        for (const t of deps.tokenizerJson.added_tokens) inv[t.id] = t.content;
        tokenOf = (id) => inv[id];
    } catch {
        // token spellings in the report are a convenience only
    }
    const divs = loadDivergences(a.divergences);
    const need = { tokenize: "tokenize", "no-parse-special": "tokenize", detokenize: "detokenize", template: "template" };
    for (const sub of new Set(a.parts.map((p) => need[p]))) checkCommand(a.splash, sub);
    if (a.parts.includes("detokenize")) checkCommand(a.splash, "tokenize");

    const tallies = [];
    for (const p of a.parts) {
        const t0 = performance.now();
        let r;
        if (p === "tokenize") r = partTokenize(a, ref, divs);
        else if (p === "no-parse-special") r = partNoParseSpecial(a, ref, divs);
        else if (p === "detokenize") r = partDetokenize(a, ref, divs);
        else r = partTemplate(a, ref, divs);
        const ts = r.tallies ?? [r.tally];
        for (const t of ts) t.seconds = (performance.now() - t0) / 1000;
        tallies.push(...ts);
    }
    let ok = true;
    for (const t of tallies) ok = printTally(t, a.maxShown, tokenOf) && ok;
    if (a.report) {
        writeFileSync(a.report, JSON.stringify(tallies.map((t) => ({
            part: t.part, total: t.total, identical: t.identical, seconds: t.seconds,
            known: t.known, mismatches: t.mismatches,
        })), null, 1));
        console.log(`report: ${a.report}`);
    }
    const n = tallies.reduce((s, t) => s + t.total, 0);
    const bad = tallies.reduce((s, t) => s + t.mismatches.length, 0);
    console.log(`${n - bad} passed, ${bad} failed`);
    process.exit(ok ? 0 : 1);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
    try {
        main();
    } catch (e) {
        console.error(`compare.mjs: ${e.message}`);
        process.exit(1);
    }
}
