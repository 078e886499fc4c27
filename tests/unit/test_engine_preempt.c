/* KV blocks on demand and preemption (src/engine/engine_kv.c): a small
 * pool where several default requests (max_tokens the rest of the context)
 * run at once, more than the pool holds at full length, so the newest is
 * preempted and recomputed. Every request still completes with exactly the
 * tokens and logits it gives alone (greedy and seeded), the snapshot counts
 * the preemptions and recomputed rows, and no block leaks; the same with a
 * hybrid model (its recurrent-state slot given back and resumed), with
 * n-gram speculation, with a draft model (its KV caught up again), and with
 * a grammar-constrained answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/spec.h"
#include "grammar/grammar.h"
#include "kernels/types.h"
#include "model/forward.h"
#include "model/kv.h"
#include "tools/synth.h"

#define VOCAB 512
#define CONTEXT 192 /* 12 blocks of 16 tokens at full length */
#define POOL 16     /* blocks: one full-length sequence and a little more */
#define N_REQ 4
#define PROMPT 20
#define GEN (CONTEXT - PROMPT) /* a default request: the rest of the context */

typedef struct fixture {
    char path[64], draft_path[64];
    model_t *model, *draft; /* the draft model: a smaller one with the same vocabulary */
    vocab_t vocab;
} fixture_t;

static model_t *synth_load(char *path, size_t cap, const model_config_t *c, uint64_t seed)
{
    err_t err;
    snprintf(path, cap, "/tmp/splash-test-preempt-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    pool_t *pool = pool_create(2, &err);
    assert_non_null(pool);
    if (synth_write(path, "test", c, TYPE_Q8_0, seed, 0.1f, NULL, pool, NULL, NULL, &err))
        fail_msg("synth: %s", err.msg);
    pool_destroy(pool);
    model_t *m = model_load(path, &err);
    if (!m)
        fail_msg("load: %s", err.msg);
    return m;
}

static int setup_preset(void **state, const char *preset, bool is_hybrid)
{
    fixture_t *f = calloc(1, sizeof *f);
    err_t err;
    model_config_t c;
    assert_int_equal(synth_preset(preset, &c, &err), 0);
    c.context_length = CONTEXT;
    assert_int_equal(c.vocab, VOCAB);
    if (is_hybrid)
        c.ssm_v_heads = 2 * c.ssm_k_heads;
    f->model = synth_load(f->path, sizeof f->path, &c, 7);
    if (!is_hybrid) {
        model_config_t d = c;
        d.n_layers = 1, d.hidden = 32, d.ffn = 64, d.n_heads = 2, d.n_kv_heads = 1;
        f->draft = synth_load(f->draft_path, sizeof f->draft_path, &d, 8);
    }
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

static int teardown(void **state)
{
    fixture_t *f = *state;
    vocab_free(&f->vocab);
    model_free(f->model);
    unlink(f->path);
    if (f->draft) {
        model_free(f->draft);
        unlink(f->draft_path);
    }
    free(f);
    return 0;
}

/* max_blocks 0: the planned pool (room for every sequence at full length). */
static engine_t *make_engine(fixture_t *f, int max_seqs, int max_blocks, int draft_mode)
{
    engine_config_t c;
    engine_config_default(&c);
    c.n_threads = 2;
    c.max_seqs = max_seqs;
    c.batch_tokens = 32;
    c.prefill_chunk = 8;
    c.queue_size = 8;
    c.max_context = CONTEXT;
    c.max_memory = 1ull << 30;
    c.max_blocks = max_blocks;
    c.draft_mode = draft_mode;
    c.draft_model = draft_mode == ENGINE_DRAFT_MODEL ? f->draft : NULL;
    if (draft_mode) {
        c.draft_max = 4;
        c.verify_rows = SPEC_VERIFY_ALL;
    }
    err_t err;
    engine_t *e = engine_create(f->model, &f->vocab, &c, &err);
    if (!e)
        fail_msg("engine: %s", err.msg);
    if (max_blocks)
        assert_int_equal(engine_get_plan(e)->n_blocks, max_blocks);
    return e;
}

/* Pseudo-random prompt tokens (no control tokens: ids < 256). */
static void make_prompt(int32_t *t, int n, uint32_t salt)
{
    uint32_t x = salt * 2654435761u + 1;
    for (int i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        t[i] = (int32_t)((x >> 8) % 256);
    }
}

typedef struct result {
    int32_t ids[GEN];
    float *logits; /* (GEN, VOCAB) */
    int n_ids, n_started;
    engine_finish_t finish;
} result_t;

static engine_req_t *submit(engine_t *e, const int32_t *prompt, uint64_t seed, grammar_t *g, result_t *res)
{
    memset(res, 0, sizeof *res);
    res->logits = calloc((size_t)GEN * VOCAB, sizeof(float));
    engine_params_t p = {.prompt = prompt, .n_prompt = PROMPT, .max_tokens = GEN, .ignore_eos = true};
    p.sampling = sampler_params_default();
    p.sampling.temperature = seed ? 0.9f : 0.0f;
    p.sampling.top_k = seed ? 40 : 0;
    p.sampling.seed = seed;
    p.token_logits = res->logits;
    p.constraint = (constrain_spec_t){.grammar = g};
    engine_req_t *r = NULL;
    err_t err;
    if (engine_submit(e, &p, &r, &err) != ENGINE_OK)
        fail_msg("submit: %s", err.msg);
    return r;
}

static void drain(engine_req_t *r, result_t *res)
{
    engine_event_t ev;
    for (;;) {
        assert_int_equal(engine_next(r, &ev, -1), 1);
        if (ev.kind == ENGINE_EV_TOKEN && res->n_ids < GEN)
            res->ids[res->n_ids++] = ev.token;
        res->n_started += ev.kind == ENGINE_EV_STARTED;
        bool is_done = ev.kind == ENGINE_EV_DONE;
        if (is_done)
            res->finish = ev.finish;
        engine_event_clear(&ev);
        if (is_done)
            return;
    }
}

static void wait_idle(engine_t *e, engine_snapshot_t *s)
{
    err_t err;
    for (int i = 0; i < 20000; i++) {
        assert_int_equal(engine_snapshot(e, s, &err), 0);
        if (s->queued + s->prefilling + s->decoding == 0)
            return;
        engine_snapshot_free(s);
        usleep(1000);
    }
    fail_msg("engine did not go idle");
}

/* N_REQ default requests, alone on a roomy engine, then all at once on a
 * POOL-block one: the same tokens and logits, bit for bit, after preemptions. */
static void check_preemption(fixture_t *f, int draft_mode, grammar_t *g)
{
    int32_t prompts[N_REQ][PROMPT];
    uint64_t seeds[N_REQ];
    result_t alone[N_REQ], mixed[N_REQ];
    for (int i = 0; i < N_REQ; i++) {
        make_prompt(prompts[i], PROMPT, 40 + (uint32_t)i);
        seeds[i] = i % 2 ? 700 + (uint64_t)i : 0; /* greedy and seeded */
        engine_t *e = make_engine(f, 1, 0, draft_mode);
        engine_req_t *r = submit(e, prompts[i], seeds[i], g, &alone[i]);
        drain(r, &alone[i]);
        engine_release(r);
        assert_int_equal(alone[i].n_ids, GEN); /* no end token: the whole context */
        engine_destroy(e);
    }
    engine_t *e = make_engine(f, N_REQ, POOL, draft_mode);
    engine_req_t *rs[N_REQ];
    for (int i = 0; i < N_REQ; i++)
        rs[i] = submit(e, prompts[i], seeds[i], g, &mixed[i]);
    for (int i = 0; i < N_REQ; i++) {
        drain(rs[i], &mixed[i]);
        engine_release(rs[i]);
        assert_int_equal(mixed[i].finish, ENGINE_FINISH_LENGTH);
        assert_int_equal(mixed[i].n_started, 1); /* a preemption is invisible to the client */
        assert_int_equal(mixed[i].n_ids, GEN);
        assert_memory_equal(mixed[i].ids, alone[i].ids, sizeof alone[i].ids);
        assert_memory_equal(mixed[i].logits, alone[i].logits, (size_t)GEN * VOCAB * sizeof(float));
        free(mixed[i].logits);
        free(alone[i].logits);
    }
    engine_snapshot_t s = {0};
    wait_idle(e, &s);
    printf("%d requests on %d blocks: %llu preemptions, %llu rows recomputed, %llu states restored\n", N_REQ, POOL,
           (unsigned long long)s.preemptions, (unsigned long long)s.recomputed_rows,
           (unsigned long long)s.snapshots_restored);
    assert_true(s.preemptions > 0);
    assert_true(s.recomputed_rows > 0);
    assert_true(s.recomputed_rows <= s.prefill_rows);
    assert_int_equal(s.completed, N_REQ);
    assert_int_equal(s.failed, 0);
    assert_int_equal(s.blocks_used, 0); /* nothing leaked */
    engine_snapshot_free(&s);
    engine_destroy(e);
}

static void test_preempt_plain(void **state)
{
    check_preemption(*state, ENGINE_DRAFT_NONE, NULL);
}

static void test_preempt_ngram(void **state)
{
    check_preemption(*state, ENGINE_DRAFT_NGRAM, NULL);
}

static void test_preempt_hybrid(void **state)
{
    check_preemption(*state, ENGINE_DRAFT_NONE, NULL);
}

static void test_preempt_hybrid_ngram(void **state)
{
    check_preemption(*state, ENGINE_DRAFT_NGRAM, NULL);
}

static void test_preempt_draft_model(void **state)
{
    check_preemption(*state, ENGINE_DRAFT_MODEL, NULL);
}

/* A grammar-constrained answer (forced tokens as jump-forward drafts, masks
 * on every row), with n-gram speculation: the constraint's state carries
 * over a preemption, so the output is the same. */
static void test_preempt_grammar(void **state)
{
    static const char gbnf[] = "root ::= \"<\" [a-z ]* \">\" [a-z]*";
    err_t err;
    grammar_t *g = grammar_from_gbnf(gbnf, strlen(gbnf), &err);
    if (!g)
        fail_msg("gbnf: %s", err.msg);
    check_preemption(*state, ENGINE_DRAFT_NGRAM, g);
    grammar_unref(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_preempt_plain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_preempt_ngram, setup, teardown),
        cmocka_unit_test_setup_teardown(test_preempt_hybrid, setup_q35, teardown),
        cmocka_unit_test_setup_teardown(test_preempt_hybrid_ngram, setup_q35, teardown),
        cmocka_unit_test_setup_teardown(test_preempt_draft_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_preempt_grammar, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
