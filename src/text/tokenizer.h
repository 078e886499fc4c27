/* Byte-level BPE tokenizer, identical to the Hugging Face Qwen2/Qwen3
 * tokenizer: added tokens split out first (leftmost, longest match), NFC
 * normalisation, the Qwen pre-tokenizer regex (PCRE2 with Unicode
 * properties, JIT), byte-level mapping, then BPE merges by rank. Immutable
 * after loading: any number of threads may encode at once. */
#ifndef SPLASH_TOKENIZER_H
#define SPLASH_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "model/gguf.h"
#include "text/vocab.h"

/* The pre-tokenizer pattern of Qwen2/Qwen3's tokenizer.json (Split, Isolated). */
#define TOK_QWEN2_PATTERN                                                                                              \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"  \
    "\\s+(?!\\S)|\\s+"

/* The same pattern as compiled: PCRE2's \s also matches U+180E (no longer
 * whitespace since Unicode 6.3; Oniguruma, which Hugging Face uses, and the
 * JavaScript port agree it is not), so \s and \S are spelled out as the
 * Unicode White_Space property. */
#define TOK_WS                                                                                                         \
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define TOK_QWEN2_PATTERN_COMPILED                                                                                     \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^" TOK_WS "\\p{L}\\p{N}]+[\\r\\n]*|[" TOK_WS \
    "]*[\\r\\n]+|[" TOK_WS "]+(?![^" TOK_WS "])|[" TOK_WS "]+"

typedef struct tokenizer tokenizer_t;

/* A growable list of token ids. */
typedef struct tok_ids {
    int32_t *v;
    size_t n, cap;
} tok_ids_t;

/* Builds the tokenizer from a loaded vocabulary and the file's merges. */
tokenizer_t *tok_load(const vocab_t *v, const gguf_t *g, err_t *err);
void tok_free(tokenizer_t *t);

/* Appends the ids of text (n bytes) to out. parse_special: control tokens'
 * text (<|im_start|>, ...) becomes the control token; otherwise it is
 * encoded as plain text. Added non-special tokens (<think>, ...) are always
 * matched, as in Hugging Face tokenizers. Invalid UTF-8 bytes are encoded as
 * their single-byte tokens, so decode gives the input back exactly. */
int tok_encode(const tokenizer_t *t, const char *text, size_t n, bool parse_special, tok_ids_t *out, err_t *err);

/* Appends the bytes of ids to a malloc'd buffer (*out, *n_out). */
int tok_decode(const tokenizer_t *t, const int32_t *ids, size_t n_ids, char **out, size_t *n_out, err_t *err);

void tok_ids_free(tok_ids_t *ids);

/* Copies n bytes to out replacing each maximal invalid UTF-8 subpart with
 * U+FFFD (as Hugging Face decode does); out needs 3 * n + 1 bytes. Returns the
 * length written (NUL-terminated). */
size_t utf8_lossy(const char *s, size_t n, char *out);

#endif
