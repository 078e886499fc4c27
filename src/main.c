/* splash: one binary, subcommands. This file only dispatches. */
#include <stdio.h>
#include <string.h>

#include "base/cpu.h"
#include "base/sysmem.h"
#include "build_info.h"
#include "cli/commands.h"
#include "kernels/dispatch.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command_t;

static const command_t commands[] = {
    {"serve", cmd_serve, "OpenAI-compatible HTTP server over the engine"},
    {"run", cmd_run, "one-shot generation to stdout, streamed"},
    {"perf", cmd_perf, "in-process speed: prefill and decode tokens/s, weight GB/s against measured bandwidth"},
    {"bench", cmd_bench, "ABBA serving comparison of a baseline and a candidate server: verdict and reports"},
    {"qualify", cmd_qualify,
     "qualification matrix: prepare (jobs from a models file), execute (resumable), summary (matrix page)"},
    {"trace", cmd_trace, "engine traces: report (validate and summarise), export (Chrome / Perfetto JSON)"},
    {"model", cmd_model,
     "model files: info (describe a GGUF), synth (write a synthetic model), convert (change weight type)"},
    {"perplexity", cmd_perplexity, "perplexity and bits per byte of a model on a text file"},
    {"tokenize", cmd_tokenize, "text to token ids with the model's tokenizer (also JSON lines, --bench)"},
    {"detokenize", cmd_detokenize, "token ids to text"},
    {"template", cmd_template, "render a conversation with the Qwen3 chat template"},
    {"grammar", cmd_grammar, "constrained decoding: bench (mask cost of a grammar over a model's vocabulary)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: splash <command> [options]   (splash <command> --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: splash <command> [options] (splash --help lists the commands)\n");
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("splash %s (%s, %s)\n", SPLASH_VERSION, SPLASH_GIT_REV, SPLASH_BUILD_TYPE);
        /* what the kernels in use do (tests/reference/compare.py reads it:
         * the integer path quantises activations, which it then models) */
        printf("kernels: %s; quantised weights multiply %s activations", cpu_level_name(cpu_level()),
               type_kernels(TYPE_Q8_0)->dot_q ? "int8" : "f32");
        if (type_kernels(TYPE_F16)->dot_q) /* the bfloat16 path, which compare.py models too (AMX: every batch, >= 1) */
            printf("; f16/bf16 weights multiply bf16 activations in batches of >= %d rows",
                   type_kernels(TYPE_F16)->q_min_rows);
        if (type_kernels(TYPE_F32)->dot_q) /* AMX: pairs of bfloat16 tiles, within ~1e-5 of f32 (unmodelled) */
            printf("; f32 weights multiply bf16 hi/lo pairs of activations");
        printf("\n");
        return 0;
    }
    sysmem_fit_address_limit();
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "splash: unknown command '%s' (splash --help lists them)\n", argv[1]);
    return EXIT_USAGE;
}
