/* splash bench `cached` scenario: the reuse arithmetic, pure so that
 * tests/unit/test_bench_cached.c checks it on its own. The workload itself
 * (bench_cached.c) sends a shared prefix twice per pair under one fresh
 * cache_salt and checks the second request's cached_tokens against these. */
#ifndef SPLASH_BENCH_CACHED_H
#define SPLASH_BENCH_CACHED_H

#include <stdbool.h>

/* Prompt tokens a request of n_prompt tokens takes from the prefix cache
 * when an earlier request under the same salt left its first n_shared
 * tokens cached, with blocks of block_size tokens. The engine's rule
 * (engine_admit.c admit): whole blocks only, matched from the start, and never
 * the last prompt token, whose logits start decoding; so
 * min(floor((n_prompt - 1) / bs), floor(n_shared / bs)) x bs. 0 when an
 * argument is out of range. */
int bench_cached_expected(int n_prompt, int n_shared, int block_size);

/* The prompt length of a fully cached continuation of an n_shared-token
 * prefix: every cached block of it plus the one token the engine always
 * computes, so a single prefill row remains. 0 when the prefix does not
 * fill one block (nothing can be reused). */
int bench_cached_full_len(int n_shared, int block_size);

/* Whether a request was served fully cached: at most one prompt row
 * computed (the row that yields the first token's logits), counted by
 * /status prefill_rows deltas or, without /status, as prompt - cached. */
static inline bool bench_cached_is_full(long long prefill_rows)
{
    return prefill_rows <= 1;
}

#endif
