/* The serving engine, driven in process: block bookkeeping and the prefix
 * cache, request lifecycle (cancel, timeout, queue limits, drain), batch
 * invariance (bitwise-identical logits alone or mixed, any chunk size, with
 * or without a cached prefix; a hybrid model's recurrent state per request),
 * prefill overlapping decode, prefix reuse per
 * salt, stop strings, and that every block is returned. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/blocks.h"
#include "engine/engine.h"
#include "engine/evq.h"
#include "engine/prefault.h"
#include "engine/spec.h"
#include "kernels/types.h"
#include "model/forward.h"
#include "model/kv.h"
#include "tools/synth.h"

#define TEST_VOCAB 512
#define TEST_CONTEXT 8192

typedef struct fixture {
    char path[64];
    model_t *model;
    vocab_t vocab;
    bool kv_q8_0;   /* make_engine's engines keep a q8_0 KV cache */
    bool state_f16; /* and a hybrid model's recurrent state in f16 */
} fixture_t;

/* A synthetic model from a synth preset, written to a temporary file and
 * loaded; is_hybrid: the qwen35-tiny file (recurrent state per sequence),
 * its value heads tiled over the key heads. */
static int g_head_dim; /* setup_preset: the preset's head_dim when 0, else this */

static int setup_preset(void **state, const char *preset, bool is_hybrid)
{
    fixture_t *f = calloc(1, sizeof *f);
    err_t err;
    snprintf(f->path, sizeof f->path, "/tmp/splash-test-engine-XXXXXX");
    int fd = mkstemp(f->path);
    assert_true(fd >= 0);
    close(fd);
    model_config_t c;
    assert_int_equal(synth_preset(preset, &c, &err), 0);
    c.context_length = TEST_CONTEXT;
    if (g_head_dim)
        c.head_dim = g_head_dim;
    if (is_hybrid) {
        assert_int_equal(c.vocab, TEST_VOCAB);
        c.ssm_v_heads = 2 * c.ssm_k_heads;
    }
    pool_t *pool = pool_create(2, &err);
    assert_non_null(pool);
    if (synth_write(f->path, "test", &c, TYPE_Q8_0, 7, 0.1f, NULL, pool, NULL, NULL, &err))
        fail_msg("synth: %s", err.msg);
    pool_destroy(pool);
    f->model = model_load(f->path, &err);
    if (!f->model)
        fail_msg("load: %s", err.msg);
    if (vocab_load(&f->vocab, f->model->gguf, f->model->cfg.vocab, &err))
        fail_msg("vocab: %s", err.msg);
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_preset(state, "tiny", false);
}

static int setup_q35(void **state)
{
    return setup_preset(state, "qwen35-tiny", true);
}

/* qwen35-tiny (heads of 64) with a q8_0 KV cache */
static int setup_q35_q8_0(void **state)
{
    setup_preset(state, "qwen35-tiny", true);
    ((fixture_t *)*state)->kv_q8_0 = true;
    return 0;
}

/* qwen35-tiny with its recurrent state kept in f16 (--state-type f16): the
 * state is rounded at the same points whatever the batch, and snapshots
 * copy it as stored, so every bit-for-bit promise holds as in f32 */
static int setup_q35_state_f16(void **state)
{
    setup_preset(state, "qwen35-tiny", true);
    ((fixture_t *)*state)->state_f16 = true;
    return 0;
}

/* tiny with heads of 32 (whole q8_0 blocks) and a q8_0 KV cache */
static int setup_hd32_q8_0(void **state)
{
    g_head_dim = 32;
    setup_preset(state, "tiny", false);
    g_head_dim = 0;
    ((fixture_t *)*state)->kv_q8_0 = true;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    vocab_free(&f->vocab);
    model_free(f->model);
    unlink(f->path);
    free(f);
    return 0;
}

static engine_t *make_engine(fixture_t *f, int max_seqs, int batch_tokens, int chunk, int queue)
{
    engine_config_t c;
    engine_config_default(&c);
    c.n_threads = 2;
    c.max_seqs = max_seqs;
    c.batch_tokens = batch_tokens;
    c.prefill_chunk = chunk;
    c.queue_size = queue;
    c.max_context = TEST_CONTEXT;
    c.max_memory = 1ull << 30;
    c.state_type = f->state_f16 ? TYPE_F16 : TYPE_F32;
    err_t err;
    if (f->kv_q8_0) { /* and the plan takes it (the model's heads are whole blocks) */
        c.kv_type = KV_Q8_0;
        engine_plan_t plan;
        if (engine_plan(f->model, &c, &plan, &err) || plan.kv_type != KV_Q8_0)
            fail_msg("q8_0 plan: %s", err.msg);
    }
    engine_t *e = engine_create(f->model, &f->vocab, &c, &err);
    if (!e)
        fail_msg("engine: %s", err.msg);
    return e;
}

/* Deterministic pseudo-random prompt tokens (no control tokens: ids < 256). */
static void make_prompt(int32_t *t, int n, uint32_t salt)
{
    uint32_t x = salt * 2654435761u + 1;
    for (int i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        t[i] = (int32_t)((x >> 8) % 256);
    }
}

/* A finished request's record. */
typedef struct result {
    int32_t *ids;
    float *logits; /* (max_tokens, vocab) */
    int n_ids;
    char text[4096];
    size_t n_text;
    engine_finish_t finish;
    engine_usage_t usage;
    uint64_t *token_steps; /* step of each token */
    uint64_t progress_steps[1024];
    int n_progress;
} result_t;

static void result_free(result_t *r)
{
    free(r->ids);
    free(r->logits);
    free(r->token_steps);
    memset(r, 0, sizeof *r);
}

static engine_req_t *submit(engine_t *e, const int32_t *prompt, int n, int max_tokens, uint64_t seed, const char *salt,
                            result_t *res)
{
    memset(res, 0, sizeof *res);
    res->ids = calloc((size_t)max_tokens, sizeof *res->ids);
    res->logits = calloc((size_t)max_tokens * TEST_VOCAB, sizeof(float));
    res->token_steps = calloc((size_t)max_tokens, sizeof *res->token_steps);
    engine_params_t p = {.prompt = prompt, .n_prompt = n, .max_tokens = max_tokens, .ignore_eos = true};
    p.sampling = sampler_params_default();
    p.sampling.temperature = seed ? 0.9f : 0.0f;
    p.sampling.top_k = seed ? 40 : 0;
    p.sampling.seed = seed;
    p.cache_salt = salt;
    p.token_logits = res->logits;
    engine_req_t *r = NULL;
    err_t err;
    if (engine_submit(e, &p, &r, &err) != ENGINE_OK)
        fail_msg("submit: %s", err.msg);
    return r;
}

/* Reads r's events until DONE. */
static void drain_events(engine_req_t *r, result_t *res)
{
    engine_event_t ev;
    for (;;) {
        assert_int_equal(engine_next(r, &ev, -1), 1);
        if (ev.kind == ENGINE_EV_TOKEN) {
            res->token_steps[res->n_ids] = ev.step;
            res->ids[res->n_ids++] = ev.token;
            if (res->n_text + ev.text_len < sizeof res->text) {
                memcpy(res->text + res->n_text, ev.text, ev.text_len);
                res->n_text += ev.text_len;
            }
        } else if (ev.kind == ENGINE_EV_PROGRESS && res->n_progress < 1024) {
            res->progress_steps[res->n_progress++] = ev.step;
        } else if (ev.kind == ENGINE_EV_DONE) {
            res->finish = ev.finish;
            res->usage = ev.usage;
            engine_event_clear(&ev);
            return;
        }
        engine_event_clear(&ev);
    }
}

static void run_alone(engine_t *e, const int32_t *prompt, int n, int max_tokens, uint64_t seed, const char *salt,
                      result_t *res)
{
    engine_req_t *r = submit(e, prompt, n, max_tokens, seed, salt, res);
    drain_events(r, res);
    engine_release(r);
}

static void wait_idle(engine_t *e, engine_snapshot_t *s)
{
    err_t err;
    for (int i = 0; i < 20000; i++) {
        assert_int_equal(engine_snapshot(e, s, &err), 0);
        if (s->queued + s->prefilling + s->decoding == 0)
            return;
        usleep(1000);
    }
    fail_msg("engine did not go idle");
}

static void assert_no_blocks_held(engine_t *e)
{
    engine_snapshot_t s = {0};
    wait_idle(e, &s);
    assert_int_equal(s.blocks_used, 0);
    assert_int_equal(s.n_active, 0);
    engine_snapshot_free(&s);
}

/* ---- block pool ---- */

static void test_blocks_lru_and_verification(void **state)
{
    (void)state;
    blk_pool_t p;
    err_t err;
    assert_int_equal(blk_pool_init(&p, 3, 4, &err), 0);
    int32_t toks_a[4] = {1, 2, 3, 4}, toks_b[4] = {1, 2, 3, 5};
    blk_hash_t root, ha, hb, hs;
    assert_true(blk_hash_root(&p, NULL, &root));
    assert_true(blk_hash_next(&p, &root, toks_a, 4, &ha));
    assert_true(blk_hash_next(&p, &root, toks_b, 4, &hb));
    assert_memory_not_equal(ha.b, hb.b, BLK_HASH_BYTES);
    assert_true(blk_hash_root(&p, "tenant", &hs));
    assert_memory_not_equal(root.b, hs.b, BLK_HASH_BYTES);

    int32_t a = blk_alloc(&p), b = blk_alloc(&p);
    assert_true(a >= 0 && b >= 0 && a != b);
    assert_true(blk_register(&p, a, &ha, toks_a));
    assert_false(blk_register(&p, b, &ha, toks_a)); /* the prefix is cached already */
    /* same hash, other tokens (a forced collision): never a hit */
    assert_int_equal(blk_lookup(&p, &ha, toks_b), -1);
    assert_int_equal(blk_lookup(&p, &hb, toks_a), -1);
    blk_release(&p, a); /* cached and unheld: evictable, not free */
    blk_release(&p, b);
    assert_int_equal(p.n_free, 2);
    assert_int_equal(p.n_lru, 1);
    assert_int_equal(blk_available(&p), 3);
    assert_int_equal(blk_lookup(&p, &ha, toks_a), a); /* a hit takes a reference */
    assert_int_equal(blk_used(&p), 1);
    blk_release(&p, a);
    /* three allocations: two free blocks, then the cached one is evicted */
    int32_t x = blk_alloc(&p), y = blk_alloc(&p), z = blk_alloc(&p);
    assert_true(x >= 0 && y >= 0 && z == a);
    assert_int_equal(p.evictions, 1);
    assert_int_equal(p.n_cached, 0);
    assert_int_equal(blk_alloc(&p), -1);
    assert_int_equal(blk_lookup(&p, &ha, toks_a), -1);
    blk_pool_free(&p);
}

/* blk_alloc_after: the next id when it is free, taken from the middle of
 * the free list (which stays consistent); a held or cached neighbour, or
 * the pool's end, falls back to blk_alloc's choice. */
static void test_blocks_alloc_after(void **state)
{
    (void)state;
    blk_pool_t p;
    err_t err;
    assert_int_equal(blk_pool_init(&p, 6, 4, &err), 0);
    int32_t b0 = blk_alloc(&p);
    assert_int_equal(b0, 0);
    assert_int_equal(blk_alloc_after(&p, b0), 1);
    int32_t held = blk_alloc(&p); /* 2 */
    assert_int_equal(held, 2);
    /* 2 is held: blk_alloc's choice (the free list's head, 3) */
    assert_int_equal(blk_alloc_after(&p, 1), 3);
    /* released in the order 3, 1, 0: free list 0, 1, 3, 4, 5; 4 from its middle */
    blk_release(&p, 3);
    blk_release(&p, 1);
    blk_release(&p, 0);
    assert_int_equal(p.n_free, 5);
    assert_int_equal(blk_alloc_after(&p, 3), 4);
    assert_int_equal(p.n_free, 4);
    /* a cached, unheld neighbour keeps its LRU place */
    int32_t toks[4] = {7, 7, 7, 7};
    blk_hash_t root, h;
    assert_true(blk_hash_root(&p, NULL, &root));
    assert_true(blk_hash_next(&p, &root, toks, 4, &h));
    assert_true(blk_register(&p, held, &h, toks));
    blk_release(&p, held);
    assert_int_equal(p.n_lru, 1);
    assert_int_equal(blk_alloc_after(&p, 1), 0); /* not 2: the head of the free list */
    assert_int_equal(blk_alloc_after(&p, 5), 1); /* past the pool's end */
    assert_int_equal(blk_alloc_after(&p, -1), 3);
    assert_int_equal(blk_alloc_after(&p, 4), 5);
    assert_int_equal(p.n_free, 0);
    assert_int_equal(blk_alloc_after(&p, 0), 2); /* every free block taken: the cached one, evicted */
    assert_int_equal(p.evictions, 1);
    assert_int_equal(blk_alloc(&p), -1);
    blk_pool_free(&p);
}

/* ---- lifecycle ---- */

static void test_greedy_matches_direct_forward(void **state)
{
    fixture_t *f = *state;
    int32_t prompt[40];
    make_prompt(prompt, 40, 1);
    engine_t *e = make_engine(f, 4, 64, 16, 8);
    result_t res;
    run_alone(e, prompt, 40, 12, 0, NULL, &res);
    assert_int_equal(res.finish, ENGINE_FINISH_LENGTH);
    assert_int_equal(res.n_ids, 12);
    assert_int_equal(res.usage.prompt_tokens, 40);
    assert_int_equal(res.usage.completion_tokens, 12);

    /* the same with the forward pass driven by hand, one row at a time, the
     * prompt's rows marked for the matrix units' attention as the engine
     * marks them (a marked row's result does not depend on its batch) */
    pool_t *pool = pool_create(1, NULL);
    fwd_ctx_t ctx;
    kv_store_t kv;
    err_t err;
    const model_config_t *c = &f->model->cfg;
    assert_int_equal(fwd_ctx_init(&ctx, f->model, pool, 1, 64, &err), 0);
    assert_int_equal(
        kv_store_init(&kv, KV_TYPE_DEFAULT, c->n_layers, 4, KV_BLOCK_SIZE, c->n_kv_heads * c->head_dim, &err), 0);
    int32_t table[4] = {3, 0, 2, 1}, toks[64];
    memcpy(toks, prompt, sizeof prompt);
    const int32_t *tables[1] = {table};
    float logits[TEST_VOCAB];
    for (int p = 0; p < 40 + 11; p++) {
        int32_t pos = p;
        uint8_t want = 1, is_prompt = p < 40;
        fwd_batch_t b = {1, &toks[p], &pos, tables, &want, NULL, NULL, NULL, NULL, &is_prompt};
        assert_int_equal(fwd_run(&ctx, &kv, &b, logits, &err), 0);
        if (p >= 39) {
            int g = p - 39;
            assert_memory_equal(logits, res.logits + (size_t)g * TEST_VOCAB, sizeof logits);
            int32_t best = 0;
            for (int i = 1; i < TEST_VOCAB; i++)
                if (logits[i] > logits[best])
                    best = i;
            assert_int_equal(best, res.ids[g]);
            toks[p + 1] = best;
        }
    }
    kv_store_free(&kv);
    fwd_ctx_free(&ctx);
    pool_destroy(pool);
    result_free(&res);
    assert_no_blocks_held(e);
    engine_destroy(e);
}

static void test_submit_validation_and_limits(void **state)
{
    fixture_t *f = *state;
    engine_t *e = make_engine(f, 1, 8, 8, 1);
    int32_t prompt[4] = {1, 2, 3, 4}, bad[2] = {1, TEST_VOCAB};
    engine_req_t *r;
    err_t err;
    engine_params_t p = {.prompt = prompt, .n_prompt = 4, .max_tokens = 4};
    p.sampling = sampler_params_default();

    engine_params_t q = p;
    q.n_prompt = 0;
    assert_int_equal(engine_submit(e, &q, &r, &err), ENGINE_E_INVALID);
    q = p;
    q.prompt = bad;
    q.n_prompt = 2;
    assert_int_equal(engine_submit(e, &q, &r, &err), ENGINE_E_INVALID);
    assert_non_null(strstr(err.msg, "vocabulary"));
    q = p;
    q.max_tokens = 0;
    assert_int_equal(engine_submit(e, &q, &r, &err), ENGINE_E_INVALID);
    q = p;
    q.max_tokens = TEST_CONTEXT;
    assert_int_equal(engine_submit(e, &q, &r, &err), ENGINE_E_TOO_LONG);
    q = p;
    q.sampling.temperature = -1.0f;
    assert_int_equal(engine_submit(e, &q, &r, &err), ENGINE_E_INVALID);
    assert_non_null(strstr(err.msg, "temperature"));
    const char *empty_stop[1] = {""};
    q = p;
    q.stop = empty_stop;
    q.n_stop = 1;
    assert_int_equal(engine_submit(e, &q, &r, &err), ENGINE_E_INVALID);

    /* one running, one queued, the next refused; then cancel both */
    engine_req_t *r1, *r2, *r3;
    q = p;
    q.max_tokens = 4000;
    q.ignore_eos = true;
    assert_int_equal(engine_submit(e, &q, &r1, &err), ENGINE_OK);
    engine_event_t ev;
    assert_int_equal(engine_next(r1, &ev, -1), 1); /* started: r1 left the queue */
    assert_int_equal(ev.kind, ENGINE_EV_STARTED);
    engine_event_clear(&ev);
    assert_int_equal(engine_submit(e, &q, &r2, &err), ENGINE_OK);
    assert_int_equal(engine_submit(e, &q, &r3, &err), ENGINE_E_QUEUE_FULL);
    engine_cancel(r2);
    engine_cancel(r1);
    result_t res = {0};
    res.ids = calloc(4000, sizeof *res.ids);
    res.token_steps = calloc(4000, sizeof *res.token_steps);
    drain_events(r1, &res);
    assert_int_equal(res.finish, ENGINE_FINISH_CANCELLED);
    result_free(&res);
    res.ids = calloc(4000, sizeof *res.ids);
    res.token_steps = calloc(4000, sizeof *res.token_steps);
    drain_events(r2, &res);
    assert_int_equal(res.finish, ENGINE_FINISH_CANCELLED);
    assert_int_equal(res.n_ids, 0);
    result_free(&res);
    engine_release(r1);
    engine_release(r2);

    /* a deadline */
    q.timeout_ns = 1000000; /* 1 ms */
    assert_int_equal(engine_submit(e, &q, &r1, &err), ENGINE_OK);
    res.ids = calloc(4000, sizeof *res.ids);
    res.token_steps = calloc(4000, sizeof *res.token_steps);
    drain_events(r1, &res);
    assert_int_equal(res.finish, ENGINE_FINISH_TIMEOUT);
    result_free(&res);
    engine_release(r1);

    /* draining refuses new work */
    engine_drain(e);
    assert_int_equal(engine_submit(e, &p, &r1, &err), ENGINE_E_DRAINING);
    engine_snapshot_t s = {0};
    wait_idle(e, &s);
    assert_int_equal(s.blocks_used, 0);
    assert_int_equal(s.cancelled, 2);
    assert_true(s.rejected >= 2);
    engine_snapshot_free(&s);
    engine_destroy(e);
}

static void test_release_while_running_and_destroy(void **state)
{
    fixture_t *f = *state;
    engine_t *e = make_engine(f, 2, 16, 8, 4);
    int32_t prompt[20];
    make_prompt(prompt, 20, 3);
    result_t a, b;
    engine_req_t *ra = submit(e, prompt, 20, 2000, 5, NULL, &a);
    engine_req_t *rb = submit(e, prompt, 20, 2000, 6, NULL, &b);
    engine_release(ra); /* the caller walks away: the engine cancels and frees it */
    engine_destroy(e);  /* rb still held by the caller: stays valid */
    drain_events(rb, &b);
    assert_int_equal(b.finish, ENGINE_FINISH_CANCELLED);
    engine_release(rb);
    result_free(&a);
    result_free(&b);
}

static void *fail_alloc(size_t n)
{
    (void)n;
    return NULL;
}

/* Every event allocation fails (evq's injection hook): the request still
 * ends with one DONE, which reports the lost answer as an error rather than
 * a short success, and its blocks go back; with memory back, the next
 * request is whole. */
static void test_events_out_of_memory(void **state)
{
    fixture_t *f = *state;
    engine_t *e = make_engine(f, 2, 16, 8, 4);
    int32_t prompt[20];
    make_prompt(prompt, 20, 4);
    result_t res;
    evq_set_alloc(fail_alloc);
    run_alone(e, prompt, 20, 8, 0, NULL, &res);
    evq_set_alloc(NULL);
    assert_int_equal(res.finish, ENGINE_FINISH_ERROR);
    assert_int_equal(res.n_ids, 0);
    assert_no_blocks_held(e);
    result_free(&res);
    run_alone(e, prompt, 20, 8, 0, NULL, &res);
    assert_int_equal(res.finish, ENGINE_FINISH_LENGTH);
    assert_int_equal(res.n_ids, 8);
    result_free(&res);
    engine_destroy(e);
}

/* ---- batch invariance ---- */

#define N_MIX 8

static void test_batch_invariance(void **state)
{
    fixture_t *f = *state;
    static const int lens[N_MIX] = {37, 5, 70, 16, 33, 1, 48, 20};
    static const int gens[N_MIX] = {10, 14, 6, 9, 12, 8, 7, 11};
    int32_t prompts[N_MIX][80];
    for (int i = 0; i < N_MIX; i++) {
        make_prompt(prompts[i], lens[i], 100 + (uint32_t)i);
        if (i % 2 == 1 && lens[i] >= 16)
            memcpy(prompts[i], prompts[0], 16 * sizeof(int32_t)); /* shares a block with request 0 */
    }
    /* each request alone, on a fresh engine with one sequence slot */
    result_t alone[N_MIX];
    for (int i = 0; i < N_MIX; i++) {
        engine_t *e = make_engine(f, 1, 8, 8, 4);
        run_alone(e, prompts[i], lens[i], gens[i], i % 3 ? 1000 + (uint64_t)i : 0, NULL, &alone[i]);
        assert_int_equal(alone[i].n_ids, gens[i]);
        engine_destroy(e);
    }
    /* then mixed with 1..7 others, under several chunk sizes and budgets */
    static const int chunks[] = {1, 7, 16, 64};
    for (size_t ci = 0; ci < sizeof chunks / sizeof *chunks; ci++) {
        for (int width = 2; width <= N_MIX; width += (width < 4 ? 1 : 2)) {
            engine_t *e = make_engine(f, width, width + chunks[ci] * 2, chunks[ci], N_MIX);
            /* a warm cache for half the runs: request 0 ran before, so its
             * full blocks (and those its sharers match) are hits */
            if (ci % 2 == 1) {
                result_t warm;
                run_alone(e, prompts[0], lens[0], 2, 0, NULL, &warm);
                result_free(&warm);
            }
            engine_req_t *rs[N_MIX];
            result_t mixed[N_MIX];
            for (int i = 0; i < width; i++)
                rs[i] = submit(e, prompts[i], lens[i], gens[i], i % 3 ? 1000 + (uint64_t)i : 0, NULL, &mixed[i]);
            for (int i = 0; i < width; i++) {
                drain_events(rs[i], &mixed[i]);
                engine_release(rs[i]);
                assert_int_equal(mixed[i].n_ids, gens[i]);
                assert_memory_equal(mixed[i].ids, alone[i].ids, (size_t)gens[i] * sizeof(int32_t));
                assert_memory_equal(mixed[i].logits, alone[i].logits, (size_t)gens[i] * TEST_VOCAB * sizeof(float));
                if (ci % 2 == 1 && i == 0)
                    assert_int_equal(mixed[i].usage.cached_tokens, 32); /* 37 tokens: two full blocks */
                result_free(&mixed[i]);
            }
            assert_no_blocks_held(e);
            engine_destroy(e);
        }
    }
    for (int i = 0; i < N_MIX; i++)
        result_free(&alone[i]);
}

/* A hybrid model (qwen35): each request's recurrent state is its own, so
 * a request mixed with others (more requests than sequence slots, so slots
 * are reused) gives the tokens and logits it gives alone, bit for bit; a
 * request whose first blocks a warm run left with a state snapshot resumes
 * there (cached_tokens 32) and still gives the same logits (speculation on
 * hybrid models: test_spec). */
#define N_Q35 5
static void test_hybrid_batch_invariance(void **state)
{
    fixture_t *f = *state;
    static const int lens[N_Q35] = {37, 5, 40, 16, 1};
    static const int gens[N_Q35] = {9, 12, 6, 8, 10};
    static const int warm_cached[N_Q35] = {32, 0, 32, 0, 0}; /* request 0's two full blocks */
    int32_t prompts[N_Q35][40];
    for (int i = 0; i < N_Q35; i++)
        make_prompt(prompts[i], lens[i], 300 + (uint32_t)i);
    memcpy(prompts[2], prompts[0], 32 * sizeof(int32_t)); /* two full blocks in common with request 0 */
    /* prefill chunks of 1 and 7 rows take the delta rule token by token;
     * with 24 and 40 the engine takes prompts in chunks of a block (pieces
     * cut back to end on a block), whose bits differ from token by token.
     * So each request runs alone once per mode (one slot, chunk 8 or 16),
     * and every configuration of that mode must give those very bits */
    result_t alone[2][N_Q35];
    for (int mode = 0; mode < 2; mode++)
        for (int i = 0; i < N_Q35; i++) {
            int chunk = mode ? KV_BLOCK_SIZE : 8;
            engine_t *e = make_engine(f, 1, chunk + 1, chunk, N_Q35);
            assert_int_equal(engine_get_plan(e)->gdn_chunk, mode ? KV_BLOCK_SIZE : 1);
            run_alone(e, prompts[i], lens[i], gens[i], i % 2 ? 500 + (uint64_t)i : 0, NULL, &alone[mode][i]);
            assert_int_equal(alone[mode][i].n_ids, gens[i]);
            assert_int_equal(alone[mode][i].usage.cached_tokens, 0);
            engine_destroy(e);
        }
    static const int chunks[] = {1, 7, 24, 40};
    for (size_t ci = 0; ci < sizeof chunks / sizeof *chunks; ci++) {
        const result_t *want = alone[chunks[ci] >= 24];
        for (int width = 2; width <= 3; width++) {
            int bt = width + chunks[ci] * 2;
            engine_t *e = make_engine(f, width, bt, chunks[ci], N_Q35);
            assert_int_equal(engine_get_plan(e)->gdn_chunk, chunks[ci] >= 24 ? KV_BLOCK_SIZE : 1);
            /* request 0 ran before: its blocks and the state at their end are kept */
            result_t warm;
            run_alone(e, prompts[0], lens[0], 2, 0, NULL, &warm);
            result_free(&warm);
            engine_req_t *rs[N_Q35];
            result_t mixed[N_Q35];
            for (int i = 0; i < N_Q35; i++)
                rs[i] = submit(e, prompts[i], lens[i], gens[i], i % 2 ? 500 + (uint64_t)i : 0, NULL, &mixed[i]);
            for (int i = 0; i < N_Q35; i++) {
                drain_events(rs[i], &mixed[i]);
                engine_release(rs[i]);
                assert_int_equal(mixed[i].finish, want[i].finish);
                assert_int_equal(mixed[i].n_ids, gens[i]);
                assert_memory_equal(mixed[i].ids, want[i].ids, (size_t)gens[i] * sizeof(int32_t));
                assert_memory_equal(mixed[i].logits, want[i].logits, (size_t)gens[i] * TEST_VOCAB * sizeof(float));
                assert_int_equal(mixed[i].usage.cached_tokens, warm_cached[i]);
                result_free(&mixed[i]);
            }
            assert_no_blocks_held(e);
            engine_destroy(e);
        }
    }
    for (int mode = 0; mode < 2; mode++)
        for (int i = 0; i < N_Q35; i++)
            result_free(&alone[mode][i]);
}

/* A follow-up turn (prompt + answer + more) on a hybrid model resumes at
 * the answer's newest cached block: decoding leaves a state snapshot there
 * (one per sequence); the logits equal a cold run's to float rounding
 * (the cold run takes the answer's positions in prompt chunks). With
 * speculation (the snapshot then comes from a verify row's copy or the
 * live state) the reuse reaches at least the block before. */
static void test_hybrid_answer_reuse(void **state)
{
    fixture_t *f = *state;
    enum { N_P = 37, GEN = 40, N_NEW = 6 };
    int32_t q[N_P + GEN + N_NEW];
    make_prompt(q, N_P, 77);
    make_prompt(q + N_P + GEN, N_NEW, 78);
    for (int spec = 0; spec < 2; spec++) {
        engine_config_t c;
        engine_config_default(&c);
        c.n_threads = 2;
        c.max_seqs = 2;
        c.batch_tokens = 64;
        c.prefill_chunk = 24;
        c.queue_size = 4;
        c.max_context = TEST_CONTEXT;
        c.max_memory = 1ull << 30;
        c.draft_mode = spec ? ENGINE_DRAFT_NGRAM : ENGINE_DRAFT_NONE;
        c.verify_rows = SPEC_VERIFY_ALL;
        err_t err;
        engine_t *e = engine_create(f->model, &f->vocab, &c, &err);
        if (!e)
            fail_msg("engine: %s", err.msg);
        result_t first, again, cold;
        run_alone(e, q, N_P, GEN, 0, "dave", &first);
        assert_int_equal(first.n_ids, GEN);
        memcpy(q + N_P, first.ids, GEN * sizeof(int32_t));
        run_alone(e, q, N_P + GEN + N_NEW, 3, 0, "dave", &again);
        /* the answer's KV reaches position N_P + GEN - 2: 4 full blocks */
        int want = (N_P + GEN - 1) / KV_BLOCK_SIZE * KV_BLOCK_SIZE;
        print_message("%s: the follow-up reused %d of its %d tokens\n", spec ? "n-gram drafts" : "plain decode",
                      again.usage.cached_tokens, N_P + GEN + N_NEW);
        if (spec)
            assert_true(again.usage.cached_tokens >= want - KV_BLOCK_SIZE && again.usage.cached_tokens <= want);
        else
            assert_int_equal(again.usage.cached_tokens, want);
        assert_no_blocks_held(e);
        engine_destroy(e);
        e = make_engine(f, 1, 32, 24, 4);
        run_alone(e, q, N_P + GEN + N_NEW, 3, 0, NULL, &cold);
        engine_destroy(e);
        /* the answer's state came through the delta rule token by token as
         * it was decoded, where the cold run takes those positions as prompt
         * chunks (fwd_batch_t.gdn_chunk): rounding apart, the same */
        assert_memory_equal(again.ids, cold.ids, 3 * sizeof(int32_t));
        double worst = 0, scale = 1;
        for (int i = 0; i < 3 * TEST_VOCAB; i++) {
            double d = fabs((double)again.logits[i] - cold.logits[i]);
            worst = d > worst ? d : worst;
            scale = fabs(cold.logits[i]) > scale ? fabs(cold.logits[i]) : scale;
        }
        assert_true(worst <= 1e-2 * scale); /* int8 activations amplify it: see test_qwen35's test_forward_chunked */
        result_free(&first);
        result_free(&again);
        result_free(&cold);
    }
}

/* Hybrid prefix reuse (state_snap.h): a prompt that extends a cached prefix
 * resumes from the snapshot at the prefix's last full block; cached_tokens
 * is exactly what was reused and prefill computes only the rest; the logits
 * are those of a cold run, bit for bit; another salt reuses nothing; a
 * prompt sharing a long prefix resumes at the last stride snapshot. */
#define Q35_SHARED 100
#define Q35_LONG 600
static void test_hybrid_prefix_reuse(void **state)
{
    fixture_t *f = *state;
    int32_t *p = malloc(Q35_LONG * 2 * sizeof(int32_t)), *p2 = p + Q35_LONG;
    make_prompt(p, Q35_LONG, 40);
    memcpy(p2, p, Q35_LONG * sizeof(int32_t));
    make_prompt(p2 + Q35_SHARED, Q35_LONG - Q35_SHARED, 41);
    result_t cold, r;
    {
        engine_t *e = make_engine(f, 1, 32, 24, 4); /* chunks of 24 end mid-block */
        run_alone(e, p2, Q35_SHARED + 30, 3, 0, NULL, &cold);
        assert_int_equal(cold.usage.cached_tokens, 0);
        engine_destroy(e);
    }
    engine_t *e = make_engine(f, 2, 64, 24, 4);
    engine_snapshot_t s = {0};
    err_t err;
    run_alone(e, p, Q35_SHARED, 2, 0, "alice", &r); /* the prefix alone */
    assert_int_equal(r.usage.cached_tokens, 0);
    result_free(&r);
    assert_int_equal(engine_snapshot(e, &s, &err), 0);
    uint64_t rows_before = s.prefill_rows;
    run_alone(e, p2, Q35_SHARED + 30, 3, 0, "alice", &r);
    assert_int_equal(r.usage.cached_tokens, Q35_SHARED / KV_BLOCK_SIZE * KV_BLOCK_SIZE);
    assert_int_equal(engine_snapshot(e, &s, &err), 0);
    assert_int_equal(s.prefill_rows - rows_before, (uint64_t)(Q35_SHARED + 30 - r.usage.cached_tokens));
    assert_memory_equal(r.ids, cold.ids, 3 * sizeof(int32_t));
    assert_memory_equal(r.logits, cold.logits, 3 * TEST_VOCAB * sizeof(float));
    result_free(&r);
    /* the same prompt again: its own last full block */
    run_alone(e, p2, Q35_SHARED + 30, 3, 0, "alice", &r);
    assert_int_equal(r.usage.cached_tokens, (Q35_SHARED + 29) / KV_BLOCK_SIZE * KV_BLOCK_SIZE);
    assert_memory_equal(r.logits, cold.logits, 3 * TEST_VOCAB * sizeof(float));
    result_free(&r);
    /* other salts see nothing */
    run_alone(e, p2, Q35_SHARED + 30, 3, 0, "bob", &r);
    assert_int_equal(r.usage.cached_tokens, 0);
    assert_memory_equal(r.logits, cold.logits, 3 * TEST_VOCAB * sizeof(float));
    result_free(&r);
    run_alone(e, p2, Q35_SHARED + 30, 3, 0, NULL, &r);
    assert_int_equal(r.usage.cached_tokens, 0);
    result_free(&r);
    /* a long prompt leaves a snapshot every ENGINE_SNAPSHOT_STRIDE blocks:
     * one sharing 520 of its tokens resumes at block 32 (512 tokens) */
    memcpy(p2, p, 520 * sizeof(int32_t));
    run_alone(e, p, Q35_LONG, 2, 0, "carol", &r);
    result_free(&r);
    result_t cold2;
    {
        engine_t *e2 = make_engine(f, 1, 32, 24, 4);
        run_alone(e2, p2, Q35_LONG, 3, 0, NULL, &cold2);
        engine_destroy(e2);
    }
    run_alone(e, p2, Q35_LONG, 3, 0, "carol", &r);
    assert_int_equal(r.usage.cached_tokens, 512);
    assert_memory_equal(r.logits, cold2.logits, 3 * TEST_VOCAB * sizeof(float));
    result_free(&r);
    result_free(&cold2);
    engine_snapshot_free(&s);
    assert_no_blocks_held(e);
    engine_destroy(e);
    result_free(&cold);
    free(p);
}

/* Snapshots are bounded (ENGINE_SNAPSHOTS_PER_SEQ per sequence slot, in the
 * memory plan) and reused least-recently-used: once newer prompts have taken
 * every slot, a prefix's blocks are still cached but its state is gone, so
 * it is computed again (cached_tokens 0), with the same logits. */
static void test_hybrid_snapshot_eviction(void **state)
{
    fixture_t *f = *state;
    engine_t *e = make_engine(f, 1, 32, 32, 4);
    const engine_plan_t *plan = engine_get_plan(e);
    assert_int_equal(plan->n_snapshots, 4);
    assert_true(plan->snapshot_bytes > 0);
    assert_int_equal(plan->snapshots, 4 * plan->snapshot_bytes);
    char line[512];
    engine_plan_format(plan, line, sizeof line);
    assert_non_null(strstr(line, "state snapshots"));
    int32_t a[60], other[40];
    make_prompt(a, 60, 50);
    result_t cold, r;
    run_alone(e, a, 60, 3, 0, NULL, &cold); /* leaves a snapshot at 48 */
    run_alone(e, a, 60, 3, 0, NULL, &r);
    assert_int_equal(r.usage.cached_tokens, 48);
    assert_memory_equal(r.logits, cold.logits, 3 * TEST_VOCAB * sizeof(float));
    result_free(&r);
    for (int i = 0; i < 4; i++) { /* four other prompts, one snapshot each */
        make_prompt(other, 40, 60 + (uint32_t)i);
        run_alone(e, other, 40, 1, 0, NULL, &r);
        result_free(&r);
    }
    run_alone(e, a, 60, 3, 0, NULL, &r);
    assert_int_equal(r.usage.cached_tokens, 0);
    assert_memory_equal(r.logits, cold.logits, 3 * TEST_VOCAB * sizeof(float));
    result_free(&r);
    run_alone(e, a, 60, 3, 0, NULL, &r); /* and that run left it again */
    assert_int_equal(r.usage.cached_tokens, 48);
    assert_memory_equal(r.logits, cold.logits, 3 * TEST_VOCAB * sizeof(float));
    result_free(&r);
    engine_snapshot_t s = {0};
    wait_idle(e, &s);
    assert_int_equal(s.snapshots_ready, 4);
    assert_int_equal(s.snapshots_taken, 6); /* a cold twice, the four others */
    assert_int_equal(s.snapshots_restored, 2);
    engine_snapshot_free(&s);
    result_free(&cold);
    assert_no_blocks_held(e);
    engine_destroy(e);
}

/* ---- scheduling ---- */

#define LONG_PROMPT 4096
#define OVERLAP_CHUNK 64

static void test_prefill_overlaps_decode(void **state)
{
    fixture_t *f = *state;
    engine_t *e = make_engine(f, 4, OVERLAP_CHUNK + 4, OVERLAP_CHUNK, 4);
    int32_t short_prompt[8], *long_prompt = malloc(LONG_PROMPT * sizeof(int32_t));
    make_prompt(short_prompt, 8, 9);
    make_prompt(long_prompt, LONG_PROMPT, 10);
    result_t a, b;
    engine_req_t *ra = submit(e, short_prompt, 8, 2000, 0, NULL, &a);
    /* wait until a is decoding */
    engine_event_t ev;
    int first_tokens = 0;
    while (first_tokens < 2) {
        assert_int_equal(engine_next(ra, &ev, -1), 1);
        if (ev.kind == ENGINE_EV_TOKEN)
            a.token_steps[a.n_ids] = ev.step, a.ids[a.n_ids++] = ev.token, first_tokens++;
        engine_event_clear(&ev);
    }
    engine_req_t *rb = submit(e, long_prompt, LONG_PROMPT, 4, 0, NULL, &b);
    drain_events(rb, &b);
    engine_cancel(ra);
    drain_events(ra, &a);
    /* b's prompt went through in 64 chunks of 64 rows, one per step ... */
    assert_int_equal(b.n_progress, LONG_PROMPT / OVERLAP_CHUNK - 1);
    for (int i = 1; i < b.n_progress; i++)
        assert_int_equal(b.progress_steps[i], b.progress_steps[i - 1] + 1);
    /* ... and a produced a token in every one of those steps and the one that
     * finished b's prefill: its largest gap is one step (one chunk plus its
     * own decode row) */
    uint64_t first = b.progress_steps[0], last = b.token_steps[0];
    for (uint64_t s = first; s <= last; s++) {
        bool found = false;
        for (int i = 0; i < a.n_ids; i++)
            found |= a.token_steps[i] == s;
        if (!found)
            fail_msg("the decoding request produced no token in step %llu", (unsigned long long)s);
    }
    engine_snapshot_t s = {0};
    wait_idle(e, &s);
    assert_int_equal(s.prefill_chunks, (uint64_t)(LONG_PROMPT / OVERLAP_CHUNK + 1));
    /* a decoded alone (width 1) beside every chunk of b's prefill */
    assert_true(s.decode_width_hist[0] >= (uint64_t)(LONG_PROMPT / OVERLAP_CHUNK));
    assert_int_equal(s.blocks_used, 0);
    engine_snapshot_free(&s);
    engine_release(ra);
    engine_release(rb);
    result_free(&a);
    result_free(&b);
    free(long_prompt);
    engine_destroy(e);
}

#define SHARED 2000

static void test_prefix_reuse_by_salt(void **state)
{
    fixture_t *f = *state;
    engine_t *e = make_engine(f, 2, 256, 128, 4);
    int32_t *p1 = malloc((SHARED + 50) * sizeof(int32_t)), *p2 = malloc((SHARED + 30) * sizeof(int32_t));
    make_prompt(p1, SHARED + 50, 20);
    memcpy(p2, p1, SHARED * sizeof(int32_t));
    make_prompt(p2 + SHARED, 30, 21);
    result_t r1, r2, r3, r4;
    run_alone(e, p1, SHARED + 50, 3, 0, "alice", &r1);
    assert_int_equal(r1.usage.cached_tokens, 0);
    engine_snapshot_t s = {0};
    err_t err;
    assert_int_equal(engine_snapshot(e, &s, &err), 0);
    uint64_t rows_before = s.prefill_rows;
    run_alone(e, p2, SHARED + 30, 3, 0, "alice", &r2);
    assert_int_equal(r2.usage.cached_tokens, SHARED / KV_BLOCK_SIZE * KV_BLOCK_SIZE);
    assert_int_equal(engine_snapshot(e, &s, &err), 0);
    assert_int_equal(s.prefill_rows - rows_before, (uint64_t)(SHARED + 30 - r2.usage.cached_tokens));
    assert_int_equal(s.cache_hit_tokens, (uint64_t)r2.usage.cached_tokens);
    run_alone(e, p2, SHARED + 30, 3, 0, "bob", &r3);
    assert_int_equal(r3.usage.cached_tokens, 0);
    run_alone(e, p2, SHARED + 30, 3, 0, NULL, &r4);
    assert_int_equal(r4.usage.cached_tokens, 0);
    /* the cached prefix gives the same continuation as computing it */
    assert_memory_equal(r2.logits, r3.logits, 3 * TEST_VOCAB * sizeof(float));
    assert_int_equal(engine_snapshot(e, &s, &err), 0);
    assert_int_equal(s.cache_lookups, 4);
    assert_true(s.blocks_cached > 0);
    engine_snapshot_free(&s);
    assert_no_blocks_held(e);
    result_free(&r1);
    result_free(&r2);
    result_free(&r3);
    result_free(&r4);
    free(p1);
    free(p2);
    engine_destroy(e);
}

/* One sequence at a time over a pool of 32 blocks (a 256-token context):
 * a few long prompts fill the prefix cache. */
static engine_t *make_small_pool_engine_with(const fixture_t *f, bool prefault_off)
{
    engine_config_t c;
    engine_config_default(&c);
    c.n_threads = 1;
    c.max_seqs = 1;
    c.batch_tokens = 32;
    c.prefill_chunk = 32;
    c.max_context = 256;
    c.max_memory = 1ull << 30;
    c.prefault_off = prefault_off;
    err_t err;
    engine_t *e = engine_create(f->model, &f->vocab, &c, &err);
    assert_non_null(e);
    return e;
}

static engine_t *make_small_pool_engine(const fixture_t *f)
{
    return make_small_pool_engine_with(f, false);
}

/* --prefault idle (the default): with nothing to run the engine faults in
 * its pools (every KV block, the logits rows) a quantum at a time and
 * counts it; the tokens are those of an engine that leaves the pages to
 * their first write (--prefault off, whose counters stay 0). */
static void test_prefault_while_idle(void **state)
{
    fixture_t *f = *state;
    engine_t *on = make_small_pool_engine_with(f, false), *off = make_small_pool_engine_with(f, true);
    err_t err;
    engine_snapshot_t s = {0};
    for (int i = 0; i < 30000; i++) {
        assert_int_equal(engine_snapshot(on, &s, &err), 0);
        if (s.prefault_state != PREFAULT_RUNNING)
            break;
        usleep(1000);
    }
    assert_true(s.prefault_bytes >= engine_get_plan(on)->kv);
    /* done; or the kernel lacks MADV_POPULATE_WRITE, or the host's memory
     * is short (then the pages left fault on their first write) */
    if (s.prefault_state == PREFAULT_DONE)
        assert_int_equal(s.prefaulted_bytes, s.prefault_bytes);
    else
        assert_true(s.prefault_state == PREFAULT_UNSUPPORTED || s.prefault_state == PREFAULT_LOW_MEMORY);
    engine_snapshot_free(&s);
    int32_t prompt[100];
    make_prompt(prompt, 100, 900);
    result_t a, b;
    run_alone(on, prompt, 100, 8, 0, NULL, &a);
    run_alone(off, prompt, 100, 8, 0, NULL, &b);
    assert_int_equal(a.n_ids, 8);
    assert_int_equal(b.n_ids, 8);
    assert_memory_equal(a.ids, b.ids, 8 * sizeof *a.ids);
    result_free(&a);
    result_free(&b);
    wait_idle(off, &s);
    assert_int_equal(s.prefault_bytes, 0);
    assert_int_equal(s.prefaulted_bytes, 0);
    assert_int_equal(s.prefault_state, PREFAULT_OFF);
    engine_snapshot_free(&s);
    engine_destroy(on);
    engine_destroy(off);
}

static void test_eviction_keeps_serving(void **state)
{
    fixture_t *f = *state;
    engine_t *e = make_small_pool_engine(f);
    int n_blocks = engine_get_plan(e)->n_blocks; /* 2 x 16 blocks */
    int32_t prompt[200];
    /* many distinct prompts: the cache fills and the oldest prefixes go */
    for (int i = 0; i < 12; i++) {
        make_prompt(prompt, 200, 300 + (uint32_t)i);
        result_t r;
        run_alone(e, prompt, 200, 2, 0, NULL, &r);
        assert_int_equal(r.n_ids, 2);
        result_free(&r);
    }
    engine_snapshot_t s = {0};
    wait_idle(e, &s);
    assert_true(s.cache_evictions > 0);
    assert_true(s.blocks_cached <= n_blocks);
    assert_int_equal(s.blocks_used, 0);
    engine_snapshot_free(&s);
    engine_destroy(e);
}

/* A finished request's blocks go back deepest first, so when the pool runs
 * short the LRU evicts a cached prompt's tail and its head stays reachable
 * (a lookup stops at the first miss: evicting the first block would strand
 * every block after it). */
static void test_eviction_takes_the_tail_first(void **state)
{
    fixture_t *f = *state;
    engine_t *e = make_small_pool_engine(f);
    assert_int_equal(engine_get_plan(e)->n_blocks, 32);
    int32_t p[200], q[200], r[160];
    make_prompt(p, 200, 700);
    make_prompt(q, 200, 701);
    make_prompt(r, 160, 702);
    result_t res;
    /* p and q leave 12 cached blocks each (24 of 32); r needs 10 and more
     * room than the 8 free, so a few of p's, the oldest, are evicted */
    run_alone(e, p, 200, 2, 0, NULL, &res);
    result_free(&res);
    run_alone(e, q, 200, 2, 0, NULL, &res);
    result_free(&res);
    run_alone(e, r, 160, 2, 0, NULL, &res);
    result_free(&res);
    engine_snapshot_t s = {0};
    wait_idle(e, &s);
    assert_true(s.cache_evictions > 0 && s.cache_evictions < 12);
    int evicted = (int)s.cache_evictions;
    engine_snapshot_free(&s);
    /* p again: its first 12 - evicted blocks are still there */
    run_alone(e, p, 200, 2, 0, NULL, &res);
    assert_int_equal(res.usage.cached_tokens, (12 - evicted) * 16);
    result_free(&res);
    engine_destroy(e);
}

static void test_stop_strings(void **state)
{
    fixture_t *f = *state;
    engine_t *e = make_engine(f, 2, 16, 8, 4);
    int32_t prompt[12];
    make_prompt(prompt, 12, 40);
    result_t free_run;
    run_alone(e, prompt, 12, 40, 0, NULL, &free_run);
    assert_true(free_run.n_text >= 12);
    /* a stop string taken from the middle of the free-running text: three
     * printable ASCII bytes, so it is valid UTF-8 whatever surrounds it */
    char stop[4] = {0};
    size_t at = 0;
    for (size_t i = 4; i + 3 <= free_run.n_text && !at; i++)
        if (free_run.text[i] >= 0x20 && free_run.text[i] < 0x7f && free_run.text[i + 1] >= 0x20 &&
            free_run.text[i + 1] < 0x7f && free_run.text[i + 2] >= 0x20 && free_run.text[i + 2] < 0x7f)
            at = i;
    if (!at)
        skip();
    memcpy(stop, free_run.text + at, 3);
    const char *first = memmem(free_run.text, free_run.n_text, stop, 3);
    assert_non_null(first);
    size_t want = (size_t)(first - free_run.text);
    {
        result_t res;
        memset(&res, 0, sizeof res);
        res.ids = calloc(40, sizeof *res.ids);
        res.token_steps = calloc(40, sizeof *res.token_steps);
        const char *stops[1] = {stop};
        engine_params_t p = {.prompt = prompt, .n_prompt = 12, .max_tokens = 40, .ignore_eos = true};
        p.sampling = sampler_params_default();
        p.stop = stops;
        p.n_stop = 1;
        engine_req_t *r;
        err_t err;
        assert_int_equal(engine_submit(e, &p, &r, &err), ENGINE_OK);
        drain_events(r, &res);
        engine_release(r);
        assert_int_equal(res.finish, ENGINE_FINISH_STOP);
        assert_int_equal(res.n_text, want);
        assert_memory_equal(res.text, free_run.text, want);
        result_free(&res);
    }
    result_free(&free_run);
    assert_no_blocks_held(e);
    engine_destroy(e);
}

static void test_memory_plan_refuses(void **state)
{
    fixture_t *f = *state;
    engine_config_t c;
    engine_config_default(&c);
    c.max_memory = 1 << 20; /* far too small */
    engine_plan_t plan;
    err_t err;
    assert_int_equal(engine_plan(f->model, &c, &plan, &err), -1);
    assert_non_null(strstr(err.msg, "does not fit in 1.0 MiB (--max-memory)"));
    /* the breakdown of what one full-context sequence needs */
    assert_non_null(strstr(err.msg, "needs at least"));
    assert_non_null(strstr(err.msg, "weights"));
    assert_non_null(strstr(err.msg, "KV"));
    assert_non_null(strstr(err.msg, "scratch"));
    c.max_memory = 0;
    c.batch_tokens = c.max_seqs - 1;
    assert_int_equal(engine_plan(f->model, &c, &plan, &err), -1);
    assert_non_null(strstr(err.msg, "batch-tokens"));
}

/* --kv-type: f16 (the default) takes half the bytes per token of f32;
 * q8_0 is refused for heads that are not whole 32-element blocks. */
static void test_memory_plan_kv_type(void **state)
{
    fixture_t *f = *state;
    engine_config_t c;
    engine_config_default(&c);
    c.max_memory = 1ull << 30;
    engine_plan_t p16, p32;
    err_t err;
    assert_int_equal(c.kv_type, KV_F16);
    assert_int_equal(engine_plan(f->model, &c, &p16, &err), 0);
    c.kv_type = KV_F32;
    assert_int_equal(engine_plan(f->model, &c, &p32, &err), 0);
    assert_int_equal(p16.kv_type, KV_F16);
    assert_true(p16.kv_per_token > 0);
    assert_true(p32.kv_per_token == 2 * p16.kv_per_token);
    assert_true(p32.kv_per_block == 2 * p16.kv_per_block);
    /* q8_0 needs heads that are whole 32-element blocks: the tiny shape's are 16 */
    c.kv_type = KV_Q8_0;
    assert_int_equal(engine_plan(f->model, &c, &p32, &err), -1);
    assert_non_null(strstr(err.msg, "q8_0 needs a head_dim that is a multiple of 32 (this model's is 16)"));
}

/* --state-type on a hybrid model: f32 by default; f16 shrinks every
 * sequence slot's state and every snapshot by half the delta rule's bytes
 * (the conv state stays f32), and the plan's line says so; any other type
 * is refused. */
static void test_memory_plan_state_type(void **state)
{
    fixture_t *f = *state;
    engine_config_t c;
    engine_config_default(&c);
    c.max_memory = 1ull << 30;
    engine_plan_t p32, p16;
    err_t err;
    assert_int_equal(c.state_type, TYPE_F32);
    assert_int_equal(engine_plan(f->model, &c, &p32, &err), 0);
    c.state_type = TYPE_F16;
    assert_int_equal(engine_plan(f->model, &c, &p16, &err), 0);
    assert_int_equal(p16.state_type, TYPE_F16);
    assert_int_equal(p32.states, fwd_state_bytes(f->model, TYPE_F32, c.max_seqs));
    assert_int_equal(p16.states, fwd_state_bytes(f->model, TYPE_F16, c.max_seqs));
    assert_true(p16.states < p32.states && p16.snapshot_bytes < p32.snapshot_bytes);
    assert_int_equal(p32.scratch - p16.scratch, p32.states - p16.states);
    assert_int_equal(p16.snapshot_bytes, fwd_state_snapshot_bytes(f->model, TYPE_F16));
    char line[512];
    engine_plan_format(&p16, line, sizeof line);
    assert_non_null(strstr(line, ", f16) + state snapshots"));
    c.state_type = TYPE_Q8_0;
    assert_int_equal(engine_plan(f->model, &c, &p16, &err), -1);
    assert_non_null(strstr(err.msg, "recurrent state's type must be f32 or f16"));
}

/* q8_0 on a model with heads of 64: 34 bytes per 32 elements, 17/32 of f16. */
static void test_memory_plan_kv_q8_0(void **state)
{
    fixture_t *f = *state;
    engine_config_t c;
    engine_config_default(&c);
    c.max_memory = 1ull << 30;
    engine_plan_t p16, p8;
    err_t err;
    assert_int_equal(engine_plan(f->model, &c, &p16, &err), 0);
    c.kv_type = KV_Q8_0;
    assert_int_equal(engine_plan(f->model, &c, &p8, &err), 0);
    assert_int_equal(p8.kv_type, KV_Q8_0);
    assert_true(p8.kv_per_block * 32 == p16.kv_per_block * 17);
    assert_true(p8.kv_per_token * 32 == p16.kv_per_token * 17);
    assert_true(p8.n_blocks >= p16.n_blocks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_lru_and_verification),
        cmocka_unit_test(test_blocks_alloc_after),
        cmocka_unit_test_setup_teardown(test_greedy_matches_direct_forward, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_plan_kv_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submit_validation_and_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_while_running_and_destroy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events_out_of_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_invariance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_invariance, setup_hd32_q8_0, teardown),
        cmocka_unit_test_setup_teardown(test_hybrid_batch_invariance, setup_q35, teardown),
        cmocka_unit_test_setup_teardown(test_hybrid_batch_invariance, setup_q35_q8_0, teardown),
        cmocka_unit_test_setup_teardown(test_memory_plan_kv_q8_0, setup_q35, teardown),
        cmocka_unit_test_setup_teardown(test_memory_plan_state_type, setup_q35, teardown),
        cmocka_unit_test_setup_teardown(test_hybrid_prefix_reuse, setup_q35, teardown),
        cmocka_unit_test_setup_teardown(test_hybrid_answer_reuse, setup_q35, teardown),
        cmocka_unit_test_setup_teardown(test_hybrid_batch_invariance, setup_q35_state_f16, teardown),
        cmocka_unit_test_setup_teardown(test_hybrid_prefix_reuse, setup_q35_state_f16, teardown),
        cmocka_unit_test_setup_teardown(test_hybrid_answer_reuse, setup_q35_state_f16, teardown),
        cmocka_unit_test_setup_teardown(test_hybrid_snapshot_eviction, setup_q35, teardown),
        cmocka_unit_test_setup_teardown(test_prefill_overlaps_decode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefix_reuse_by_salt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eviction_keeps_serving, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eviction_takes_the_tail_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefault_while_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_strings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_plan_refuses, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
