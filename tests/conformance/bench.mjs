// Single-thread encode throughput of the JavaScript reference tokenizer
// (@huggingface/tokenizers over Qwen3's tokenizer.json), for bench/tokenize.sh.
//
//   node bench.mjs --file corpus.txt [--reps 3] [--deps DIR]
//
// Prints a line in the format of `splash tokenize --bench`:
//   encode: 10.00 MB, 2301234 tokens, median 0.52 s over 3 reps, 20.1 MB/s
// (MB = 10^6 bytes of UTF-8). Loading the tokenizer is not timed; the BPE
// word cache is cleared before every rep so no rep reuses an earlier one's
// work. The whole file is encoded as one string, special-token text parsed.
import { readFileSync } from "node:fs";
import { depsDir, loadDeps } from "./deps.mjs";
import { makeTokenizers, encodeIds } from "./reference.mjs";

const args = process.argv.slice(2);
let file = null, reps = 3, deps;
for (let i = 0; i < args.length; i++) {
    if (args[i] === "--file") file = args[++i];
    else if (args[i] === "--reps") reps = Number(args[++i]);
    else if (args[i] === "--deps") deps = args[++i];
    else {
        console.error(`bench.mjs: unknown argument '${args[i]}' (--file F, --reps N, --deps DIR)`);
        process.exit(2);
    }
}
if (!file || !(reps >= 1)) {
    console.error("bench.mjs: --file FILE is required, --reps must be >= 1");
    process.exit(2);
}
const text = readFileSync(file, "utf8");
const mb = Buffer.byteLength(text, "utf8") / 1e6;
const { tok } = makeTokenizers(loadDeps(depsDir(deps)));
const seconds = [];
let nTokens = 0;
for (let r = 0; r < reps; r++) {
    tok.model.clear_cache?.();
    const t0 = process.hrtime.bigint();
    nTokens = encodeIds(tok, text).length;
    seconds.push(Number(process.hrtime.bigint() - t0) / 1e9);
}
seconds.sort((a, b) => a - b);
const median = seconds.length % 2 ? seconds[(seconds.length - 1) / 2] : (seconds[seconds.length / 2 - 1] + seconds[seconds.length / 2]) / 2;
console.log(`encode: ${mb.toFixed(2)} MB, ${nTokens} tokens, median ${median.toFixed(2)} s over ${reps} reps, ${(mb / median).toFixed(2)} MB/s`);
