// A qwen35 file splash writes, read by an independent GGUF parser (npm's
// @huggingface/gguf), against llama.cpp's layout as tabled in
// tests/data/qwen35-llama-names.json: every metadata key (present when
// required, of its kind, consistent), every tensor name the layer pattern
// implies (no more, no fewer), each with the table's shape formula and the
// f32 type where llama.cpp's converter keeps f32.
//   node qwen35_names.mjs --model FILE [--deps DIR] [--table JSON] [--self-check]
// --self-check: corrupted tables (a shape, a name, a key, the f32 rule, the
// layer pattern) must each be caught, so the check can fail.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

import { REPO_ROOT, depsDir } from "./deps.mjs";

const { values: opt } = parseArgs({
    options: {
        model: { type: "string" },
        deps: { type: "string" },
        table: { type: "string", default: path.join(REPO_ROOT, "tests", "data", "qwen35-llama-names.json") },
        "self-check": { type: "boolean", default: false },
    },
});
if (!opt.model) {
    console.error("usage: qwen35_names.mjs --model FILE [--deps DIR] [--table JSON] [--self-check]");
    process.exit(2);
}

const GGML_F32 = 0;

// A shape formula ("2*nh*hd", "Dv/nv") over the variables: numbers, names,
// * and /, evaluated left to right (all the table needs).
function evaluate(formula, vars) {
    let value = null, op = "*";
    for (const tok of formula.match(/[A-Za-z_]\w*|\d+|[*/]/g)) {
        if (tok === "*" || tok === "/") { op = tok; continue; }
        const x = /^\d+$/.test(tok) ? Number(tok) : vars[tok];
        if (x === undefined) throw new Error(`formula '${formula}': unknown variable ${tok}`);
        value = value === null ? x : op === "*" ? value * x : value / x;
    }
    return value;
}

function check(table, file) {
    const errors = [];
    const meta = file.metadata;
    const vars = {};
    const known = new Set(table.metadata.map((m) => m.key));
    for (const m of table.metadata) {
        let v = meta[m.key];
        if (v === undefined) {
            if (m.required) errors.push(`metadata ${m.key}: missing`);
            v = m.default;
        } else if (m.kind === "int" && !Number.isInteger(v)) {
            errors.push(`metadata ${m.key}: ${v} is not an integer`);
        } else if (m.kind === "float" && typeof v !== "number") {
            errors.push(`metadata ${m.key}: ${v} is not a number`);
        } else if (m.kind === "string" && (typeof v !== "string" || (m.value !== undefined && v !== m.value))) {
            errors.push(`metadata ${m.key}: '${v}', want '${m.value}'`);
        } else if (m.kind === "int_array" && (!Array.isArray(v) || v.length !== m.length || !v.every(Number.isInteger))) {
            errors.push(`metadata ${m.key}: want ${m.length} integers, got ${JSON.stringify(v)}`);
        }
        if (m.var) vars[m.var] = v;
    }
    for (const key of Object.keys(meta))
        if (key.startsWith("qwen35.") && !known.has(key)) errors.push(`metadata ${key}: not a qwen35 key llama.cpp reads`);
    for (const m of table.metadata) {
        if (m.equals && meta[m.key] !== vars[m.equals]) errors.push(`metadata ${m.key}: ${meta[m.key]} != ${m.equals} (${vars[m.equals]})`);
        if (m.sum && Array.isArray(meta[m.key])) {
            const s = meta[m.key].reduce((a, b) => a + b, 0);
            if (s !== evaluate(m.sum, vars)) errors.push(`metadata ${m.key}: sums to ${s}, want ${m.sum} = ${evaluate(m.sum, vars)}`);
        }
    }
    if (errors.length) return errors;

    const tensors = new Map(file.tensorInfos.map((t) => [t.name, t]));
    const embd = tensors.get("token_embd.weight");
    vars.V = embd ? Number(embd.shape[1]) : NaN;
    vars.Dk = vars.S * vars.G;
    vars.conv = 2 * vars.Dk + vars.Dv;
    const nMain = vars.block_count - vars.nextn;
    const kinds = (il) => {
        const isNextn = il >= nMain;
        const isFull = isNextn || (il + 1) % vars.interval === 0;
        return { every: true, full: isFull, gdn: !isFull, nextn: isNextn };
    };
    const expected = new Map(); // name -> table row
    for (const row of table.tensors) {
        if (row.where === "global") expected.set(row.name, row);
        else for (let il = 0; il < vars.block_count; il++) if (kinds(il)[row.where]) expected.set(row.name.replace("{bid}", String(il)), row);
    }
    for (const [name, row] of expected) {
        const t = tensors.get(name);
        if (!t) {
            if (!row.optional) errors.push(`tensor ${name}: missing`);
            continue;
        }
        const got = t.shape.map(Number);
        const want = row.shape.map((f) => evaluate(f, vars));
        if (got.length !== want.length || got.some((x, i) => x !== want[i]))
            errors.push(`tensor ${name}: shape [${got}], want [${want}] (${row.shape.join(", ")})`);
        if (row.f32 && t.dtype !== GGML_F32) errors.push(`tensor ${name}: ggml type ${t.dtype}, llama.cpp keeps it f32`);
    }
    for (const name of tensors.keys()) if (!expected.has(name)) errors.push(`tensor ${name}: not in llama.cpp's qwen35 layout`);
    return errors;
}

const require = createRequire(path.join(depsDir(opt.deps), "package.json"));
const { gguf } = await import(pathToFileURL(require.resolve("@huggingface/gguf")).href);
const file = await gguf(path.resolve(opt.model), { allowLocalFile: true });
const table = JSON.parse(readFileSync(opt.table, "utf8"));

if (!opt["self-check"]) {
    const errors = check(table, file);
    for (const e of errors) console.error(`FAIL: ${e}`);
    const nBlocks = file.metadata["qwen35.block_count"];
    console.log(`qwen35 names: ${file.tensorInfos.length} tensors, ${Object.keys(file.metadata).length} metadata keys, ${nBlocks} blocks: ${errors.length ? `${errors.length} mismatches` : "all match llama.cpp's layout"}`);
    process.exit(errors.length ? 1 : 0);
}

// Self-check: each corruption of the table must be caught.
const clone = () => JSON.parse(JSON.stringify(table));
const row = (t, name) => t.tensors.find((r) => r.name === name);
const corruptions = {
    "attn_q without the gate rows": (t) => { row(t, "blk.{bid}.attn_q.weight").shape = ["H", "nh*hd"]; },
    "ssm_conv1d transposed": (t) => { row(t, "blk.{bid}.ssm_conv1d.weight").shape = ["conv", "K"]; },
    "ssm_a with a .weight suffix": (t) => { row(t, "blk.{bid}.ssm_a").name = "blk.{bid}.ssm_a.weight"; },
    "ssm_dt named .weight": (t) => { row(t, "blk.{bid}.ssm_dt.bias").name = "blk.{bid}.ssm_dt.weight"; },
    "ssm_alpha said to be f32": (t) => { row(t, "blk.{bid}.ssm_alpha.weight").f32 = true; },
    "ssm_norm as wide as Dv": (t) => { row(t, "blk.{bid}.ssm_norm.weight").shape = ["Dv"]; },
    "eh_proj the other way round": (t) => { row(t, "blk.{bid}.nextn.eh_proj.weight").shape = ["H", "2*H"]; },
    "post_attention_norm named ffn_norm": (t) => { row(t, "blk.{bid}.post_attention_norm.weight").name = "blk.{bid}.ffn_norm.weight"; },
    "nextn.enorm missing from the table": (t) => { t.tensors = t.tensors.filter((r) => r.name !== "blk.{bid}.nextn.enorm.weight"); },
    "nextn blocks without attention": (t) => { for (const r of t.tensors) if (r.where === "full") r.where = "gdn_or_never"; },
    "interval read from a wrong key": (t) => { t.metadata.find((m) => m.key === "qwen35.full_attention_interval").key = "qwen35.attention.full_interval"; },
    "a required key that is not written": (t) => { t.metadata.push({ key: "qwen35.ssm.dt_rank", kind: "int", required: true }); },
    "sections summing to the full rope dim": (t) => { t.metadata.find((m) => m.key === "qwen35.rope.dimension_sections").sum = "rope_dim"; },
};
let missed = 0;
for (const [what, corrupt] of Object.entries(corruptions)) {
    const t = clone();
    corrupt(t);
    const errors = check(t, file);
    if (errors.length === 0) { console.error(`FAIL: corruption not caught: ${what}`); missed++; }
}
if (check(table, file).length) { console.error("FAIL: the good table does not match the file"); missed++; }
console.log(`qwen35 names self-check: ${Object.keys(corruptions).length - missed} of ${Object.keys(corruptions).length} corruptions caught`);
process.exit(missed ? 1 : 0);
