/* Constrained decoding: one grammar form, a byte-level matcher over it, and
 * token masks over a model's vocabulary.
 *
 * Layering: grammar/ sits above text/ (it reads a vocab_t) and below
 * engine/. The front-ends (GBNF text, JSON Schema, "any JSON value") all
 * compile through the builder below into one form:
 *
 *   a grammar is a set of rules; a rule is a list of alternatives; an
 *   alternative is a sequence of elements; an element is either one byte
 *   from a 256-bit byte set or a reference to a rule.
 *
 * Everything is bytes: a Unicode character class is compiled by the builder
 * (gr_codepoints) into alternatives of byte-set sequences that match exactly
 * the UTF-8 encodings of the class, so the matcher never decodes UTF-8 and
 * multi-byte characters split across tokens need no special case.
 *
 * The matcher is a nondeterministic pushdown automaton: a state is a set of
 * stacks of grammar positions (after every reference on top is expanded
 * down to byte sets). Left recursion is refused when a grammar is built, so
 * expansion always terminates.
 *
 * A mask for a state is the set of vocabulary tokens whose whole byte string
 * the state can accept next; end-of-generation tokens are allowed exactly
 * when the state can end (the grammar's root is complete); control tokens
 * other than those are never allowed. Masks are computed by walking a trie
 * of the vocabulary's byte strings against the state, and cached per state
 * inside the grammar (the cache is bounded; see GR_MASK_CACHE_BYTES).
 *
 * Threads: building and freeing happen on any thread. A built grammar is
 * shared by reference count (requests with the same schema may share one).
 * State operations and masks on states of one grammar must be called from
 * one thread at a time (the engine thread, or a mask worker while the
 * engine thread waits for it): the mask cache is not locked. */
#ifndef SPLASH_GRAMMAR_H
#define SPLASH_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "text/vocab.h"

#define GR_INF (-1)                     /* gr_repeat: no upper bound */
#define GR_MAX_RULES (1 << 20)          /* rules per grammar (front-ends expand repetitions) */
#define GR_MAX_REPEAT 10000             /* the largest bounded repetition count ({n,m}) */
#define GR_MAX_STACKS 4096              /* stacks per state: beyond, a byte is refused (ambiguity guard) */
#define GR_MASK_CACHE_BYTES (64u << 20) /* mask cache per grammar; cleared when it would grow past */
#define GR_MAX_GBNF_BYTES (1u << 20)    /* GBNF text accepted by grammar_from_gbnf */

typedef struct grammar grammar_t;
typedef struct gr_builder gr_builder_t;
typedef struct gr_state gr_state_t;
typedef struct gr_vocab gr_vocab_t;

/* ------------------------------------------------------------ builder */

/* Each constructor returns a rule id (>= 0), or -1 once the builder has
 * failed (out of memory, a limit, a bad argument); the first failure's
 * message is kept and gr_build reports it. Rule ids are only meaningful to
 * the builder that made them. */
gr_builder_t *gr_builder_new(void);
void gr_builder_free(gr_builder_t *b);                  /* after gr_build, or to abandon */
int gr_empty(gr_builder_t *b);                          /* matches the empty string */
int gr_byteset(gr_builder_t *b, const uint8_t set[32]); /* one byte whose bit (set[b >> 3] >> (b & 7)) & 1 is 1 */
int gr_byte_range(gr_builder_t *b, uint8_t lo, uint8_t hi);
int gr_literal(gr_builder_t *b, const char *s, size_t n); /* exactly these bytes (n == 0: empty) */
/* One Unicode code point, UTF-8 encoded: in [ranges[2i], ranges[2i+1]] for
 * some i (or in none of them when is_negated; surrogates D800-DFFF are never
 * matched; the universe is 0..10FFFF). */
int gr_codepoints(gr_builder_t *b, const uint32_t *ranges, int n_ranges, bool is_negated);
int gr_seq(gr_builder_t *b, const int *rules, int n);    /* concatenation (n == 0: empty) */
int gr_choice(gr_builder_t *b, const int *rules, int n); /* alternation, n >= 1 */
/* rule repeated min..max times (max GR_INF: unbounded; 0 <= min <= max). */
int gr_repeat(gr_builder_t *b, int rule, int min, int max);
/* A named rule defined later (recursion, GBNF rule names, $ref). */
int gr_declare(gr_builder_t *b, const char *name);
/* Gives a declared rule its body. -1 if already defined. */
int gr_define(gr_builder_t *b, int declared, int body);
/* Fails the builder with a message (a front-end's own error). Returns -1. */
int gr_fail(gr_builder_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool gr_failed(const gr_builder_t *b);

/* Builds the grammar rooted at root. Refuses (NULL, message): a builder
 * that failed, a declared rule never defined (names it), left recursion
 * (names the rule), a grammar whose language is empty. The builder can be
 * freed afterwards. The result has one reference. */
grammar_t *gr_build(gr_builder_t *b, int root, err_t *err);

grammar_t *grammar_ref(grammar_t *g);
void grammar_unref(grammar_t *g); /* NULL is a no-op */

/* ---------------------------------------------------------- front-ends */

/* GBNF (llama.cpp's grammar text): `name ::= alternatives`, rule `root` is
 * the start; literals "..." with \n \t \r \\ \" \xHH \uHHHH \UHHHHHHHH
 * escapes; character classes [a-z], [^...]; `.` any character; grouping
 * ( ); postfix * + ? {n} {n,} {n,m}; `#` comments. The message names the
 * line and column of an error. */
grammar_t *grammar_from_gbnf(const char *text, size_t len, err_t *err);

/* ----------------------------------------------------------- matching */

gr_state_t *gr_state_new(grammar_t *g); /* at the start of the root; holds a reference */
gr_state_t *gr_state_copy(const gr_state_t *s);
void gr_state_free(gr_state_t *s);
/* Feeds bytes. 0 and the state advanced, or -1 and the state is unchanged
 * when some byte cannot be accepted. */
int gr_state_accept_bytes(gr_state_t *s, const uint8_t *bytes, size_t n);
bool gr_state_can_end(const gr_state_t *s); /* the root is complete here */
bool gr_state_is_done(const gr_state_t *s); /* can end and accepts no further byte */

/* ---------------------------------------------------------- vocabulary */

/* The vocabulary as the masker sees it: every token's byte string (as
 * vocab_token_bytes renders it), a byte trie over them, and which tokens
 * end generation. Control tokens that are not in is_eog are never allowed.
 * is_eog: (v->n_tokens) or NULL (then only v->eos_id). Built once per
 * model and shared; read-only after creation. */
gr_vocab_t *gr_vocab_new(const vocab_t *v, const bool *is_eog, err_t *err);
void gr_vocab_free(gr_vocab_t *gv);
int gr_vocab_size(const gr_vocab_t *gv);
size_t gr_vocab_mask_words(const gr_vocab_t *gv); /* uint32 words in a mask: (n_tokens + 31) / 32 */

/* The mask for the state's next token: bit (id & 31) of mask[id >> 5] set
 * when token id is allowed. Returns the number of allowed tokens (0: the
 * state is stuck, which a built grammar reaches only through a refused
 * byte); *only is the allowed token when exactly one is (forced), else -1.
 * Cached per state in the grammar. */
int gr_mask(gr_state_t *s, const gr_vocab_t *gv, uint32_t *mask, int32_t *only);
/* Advances by one token's bytes; an end-of-generation token is accepted
 * only when the state can end (the state is then done). 0 or -1 (state
 * unchanged). */
int gr_state_accept_token(gr_state_t *s, const gr_vocab_t *gv, int32_t id);

/* Steering toward closing. Bytes the shortest completion from the state
 * still needs (0 when it can end now; UINT32_MAX when nothing completes). */
uint32_t gr_state_min_bytes(gr_state_t *s);
/* The mask restricted to tokens after which the grammar can still complete
 * in at most max_bytes bytes (end-of-generation tokens: when it can end).
 * Never cached (it depends on max_bytes). Returns the allowed count and
 * *only as gr_mask does. With every byte a token of its own, a request that
 * has n tokens left and masks with max_bytes = n - 2 (one for this token,
 * one for the end token) always ends within its budget. */
int gr_mask_budget(gr_state_t *s, const gr_vocab_t *gv, uint32_t max_bytes, uint32_t *mask, int32_t *only);

/* Counters of one grammar's mask cache (tests, benchmarks). */
typedef struct gr_cache_stats {
    uint64_t lookups, hits, entries, bytes, clears;
} gr_cache_stats_t;
void gr_cache_stats(const grammar_t *g, gr_cache_stats_t *out);

#endif
