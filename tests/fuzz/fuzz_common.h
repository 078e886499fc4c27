/* Shared by the fuzz harnesses: the demo model's vocabulary and tokenizer
 * (a real byte-level BPE, loaded once per process), and a scratch file for
 * readers that take a path. Harnesses are built two ways (tests/fuzz/
 * CMakeLists.txt): with libFuzzer (SPLASH_FUZZ=ON, clang) for campaigns, or
 * with replay_main.c so CTest replays the corpora in any sanitizer build. */
#ifndef SPLASH_FUZZ_COMMON_H
#define SPLASH_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/gguf.h"
#include "model/model.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The scalar reference kernels: instrumented in every build (the SIMD files
 * are not sanitised in the libFuzzer build, see the top CMakeLists.txt). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    setenv("SPLASH_CPU", "generic", 0);
    return 0;
}

typedef struct fuzz_model {
    model_t *model;
    vocab_t vocab;
    tokenizer_t *tok;
} fuzz_model_t;

/* The demo draft model (SPLASH_FUZZ_DEMO, set by CMake), loaded on first
 * use and kept for the process: harness set-up, not the thing fuzzed. */
static inline fuzz_model_t *fuzz_demo(void)
{
    static fuzz_model_t fm;
    if (fm.tok)
        return &fm;
    err_t err;
    fm.model = model_load(SPLASH_FUZZ_DEMO, &err);
    if (!fm.model || vocab_load(&fm.vocab, fm.model->gguf, fm.model->cfg.vocab, &err) ||
        !(fm.tok = tok_load(&fm.vocab, fm.model->gguf, &err))) {
        fprintf(stderr, "fuzz: cannot load %s: %s\n", SPLASH_FUZZ_DEMO, err.msg);
        abort();
    }
    return &fm;
}

/* A NUL-terminated copy of the input (most parsers take C strings). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Writes the input to path (a per-process scratch file under /tmp). */
static inline void fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size) {
        perror(path);
        abort();
    }
    fclose(f);
}

/* Whether s[0, n) is well-formed UTF-8 (no overlongs, surrogates or
 * code points above U+10FFFF). */
static inline int fuzz_is_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!len || i + len > n)
            return 0;
        uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += len;
    }
    return 1;
}

#endif
