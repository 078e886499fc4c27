/* Structured output inside the engine: a GBNF grammar constrains the
 * output of a random model (checked by an independent POSIX regex, not by
 * the grammar engine), forced tokens go through jump-forward rows (fewer
 * steps than tokens) with log-probability 0, and speculation never changes
 * the output: n-gram drafts, draft-model drafts, and drafts garbled on
 * purpose (cut at planning, or met uncut by verification) give exactly the
 * tokens and log-probabilities of constrained decoding without speculation,
 * greedy and seeded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "grammar/grammar.h"
#include "kernels/types.h"
#include "tools/synth.h"

typedef struct fixture {
    char path[64], draft_path[64];
    model_t *model, *draft;
    vocab_t vocab;
} fixture_t;

static void synth_to(char *path, size_t cap, const model_config_t *c, uint64_t seed)
{
    err_t err;
    snprintf(path, cap, "/tmp/splash-test-grammar-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    pool_t *pool = pool_create(2, &err);
    if (synth_write(path, "test", c, TYPE_Q8_0, seed, 0.1f, NULL, pool, NULL, NULL, &err))
        fail_msg("synth: %s", err.msg);
    pool_destroy(pool);
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    err_t err;
    model_config_t c;
    assert_int_equal(synth_preset("tiny", &c, &err), 0);
    synth_to(f->path, sizeof f->path, &c, 21);
    model_config_t d = c;
    d.n_layers = 1, d.hidden = 32, d.ffn = 64, d.n_heads = 2, d.n_kv_heads = 1;
    synth_to(f->draft_path, sizeof f->draft_path, &d, 22);
    f->model = model_load(f->path, &err);
    f->draft = model_load(f->draft_path, &err);
    assert_non_null(f->model);
    assert_non_null(f->draft);
    assert_int_equal(vocab_load(&f->vocab, f->model->gguf, f->model->cfg.vocab, &err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    vocab_free(&f->vocab);
    model_free(f->model);
    model_free(f->draft);
    unlink(f->path);
    unlink(f->draft_path);
    free(f);
    return 0;
}

enum { SPEC_NONE, SPEC_NGRAM, SPEC_NGRAM_GARBLE_CUT, SPEC_NGRAM_GARBLE_UNCUT, SPEC_MODEL, SPEC_N };

static engine_t *make_engine(fixture_t *f, int spec)
{
    engine_config_t c;
    engine_config_default(&c);
    c.n_threads = 2;
    c.max_seqs = 4;
    c.batch_tokens = 64;
    c.prefill_chunk = 16;
    c.max_context = 1024;
    c.max_memory = 1ull << 30;
    if (spec != SPEC_NONE) {
        c.draft_mode = spec == SPEC_MODEL ? ENGINE_DRAFT_MODEL : ENGINE_DRAFT_NGRAM;
        c.draft_model = f->draft;
        c.draft_max = 4;
        c.verify_rows = SPEC_VERIFY_ALL;
        c.test_garble_drafts = spec == SPEC_NGRAM_GARBLE_CUT ? 1 : spec == SPEC_NGRAM_GARBLE_UNCUT ? 2 : 0;
    }
    err_t err;
    engine_t *e = engine_create(f->model, &f->vocab, &c, &err);
    if (!e)
        fail_msg("engine: %s", err.msg);
    return e;
}

typedef struct run {
    int32_t ids[512];
    float lp[512]; /* each token's log-probability */
    int n_top[512];
    int n;
    char text[2048];
    size_t n_text;
    engine_finish_t finish;
} run_t;

/* The prompt: text spelled in byte tokens (so n-gram drafts find matches). */
static int byte_prompt(const vocab_t *v, const char *text, int32_t *out)
{
    int n = 0;
    for (const char *p = text; *p; p++)
        out[n++] = v->byte_token[(uint8_t)*p];
    return n;
}

static void generate(engine_t *e, const vocab_t *v, const char *prompt, grammar_t *g, const char *trigger,
                     uint64_t seed, int max_tokens, run_t *out)
{
    int32_t ids[512];
    memset(out, 0, sizeof *out);
    engine_params_t p = {.n_prompt = byte_prompt(v, prompt, ids), .max_tokens = max_tokens};
    p.prompt = ids;
    p.sampling = sampler_params_default();
    if (seed) {
        p.sampling.temperature = 1.5f;
        p.sampling.seed = seed;
        p.sampling.repetition_penalty = seed % 2 ? 1.1f : 1.0f;
    }
    p.constraint = (constrain_spec_t){.grammar = g, .trigger = trigger};
    p.logprobs = true;
    p.top_logprobs = 3;
    engine_req_t *r;
    err_t err;
    if (engine_submit(e, &p, &r, &err) != ENGINE_OK)
        fail_msg("submit: %s", err.msg);
    engine_event_t ev;
    for (;;) {
        assert_int_equal(engine_next(r, &ev, -1), 1);
        if (ev.kind == ENGINE_EV_TOKEN) {
            assert_true(ev.has_logprob && ev.logprob <= 0.0f && ev.n_top >= 1);
            out->lp[out->n] = ev.logprob;
            out->n_top[out->n] = ev.n_top;
            out->ids[out->n++] = ev.token;
            assert_true(out->n_text + ev.text_len < sizeof out->text);
            memcpy(out->text + out->n_text, ev.text, ev.text_len);
            out->n_text += ev.text_len;
        }
        bool is_done = ev.kind == ENGINE_EV_DONE;
        if (is_done)
            out->finish = ev.finish;
        engine_event_clear(&ev);
        if (is_done)
            break;
    }
    engine_release(r);
}

static bool matches(const char *pattern, const char *text)
{
    regex_t re;
    assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
    bool is_match = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return is_match;
}

static const char GBNF[] = "root ::= \"{\\\"id\\\":\" [1-9] [0-9]{0,3} \",\\\"tags\\\":[\" tag (\",\" tag){0,3} "
                           "\"],\\\"ok\\\":\" (\"true\" | \"false\") \"}\"\n"
                           "tag ::= \"\\\"\" [a-z]{1,6} \"\\\"\"\n";
static const char REGEX[] =
    "^\\{\"id\":[1-9][0-9]{0,3},\"tags\":\\[\"[a-z]{1,6}\"(,\"[a-z]{1,6}\"){0,3}\\],\"ok\":(true|false)\\}$";
static const char PROMPT[] = "{\"id\":12,\"tags\":[\"ab\",\"cd\"],\"ok\":true}\n{\"id\":12,\"tags\":[\"ab\",\"cd\"],"
                             "\"ok\":true}\n{\"id\":12,\"tags\":[\"ab\",";

static grammar_t *compile(void)
{
    err_t err;
    grammar_t *g = grammar_from_gbnf(GBNF, strlen(GBNF), &err);
    if (!g)
        fail_msg("gbnf: %s", err.msg);
    return g;
}

/* Greedy and sampled outputs match the grammar and end with it; the
 * grammar's literals are forced, several per step. */
static void test_output_follows_grammar(void **state)
{
    fixture_t *f = *state;
    grammar_t *g = compile();
    engine_t *e = make_engine(f, SPEC_NONE);
    for (uint64_t seed = 0; seed < 12; seed++) {
        run_t run;
        generate(e, &f->vocab, PROMPT, g, NULL, seed, 200, &run);
        run.text[run.n_text] = 0;
        if (!matches(REGEX, run.text))
            fail_msg("seed %llu: output does not match: %s", (unsigned long long)seed, run.text);
        assert_int_equal(run.finish, ENGINE_FINISH_STOP); /* the grammar ended, so only the end token was left */
        /* a token the grammar forces had all the mass: log-probability 0, alone */
        int n_sure = 0;
        for (int i = 0; i < run.n; i++)
            n_sure += run.lp[i] == 0.0f && run.n_top[i] == 1;
        assert_true(n_sure >= 10);
    }
    engine_snapshot_t s = {0};
    assert_int_equal(engine_snapshot(e, &s, NULL), 0);
    assert_int_equal(s.grammar_requests, 12);
    assert_true(s.grammar_masks > 0 && s.grammar_mask_ns > 0);
    assert_true(s.grammar_forced > 12 * 10);   /* {"id": ,"tags":[" ... are forced */
    assert_true(s.steps < s.generated_tokens); /* forced runs share steps (jump-forward) */
    engine_snapshot_free(&s);
    engine_destroy(e);
    grammar_unref(g);
}

/* Every speculation mode gives the tokens of constrained decoding without it. */
static void test_speculation_keeps_output(void **state)
{
    fixture_t *f = *state;
    grammar_t *g = compile();
    run_t want[6];
    engine_t *e = make_engine(f, SPEC_NONE);
    for (int s = 0; s < 6; s++)
        generate(e, &f->vocab, PROMPT, g, NULL, (uint64_t)s * 3, 200, &want[s]);
    engine_destroy(e);
    for (int mode = SPEC_NGRAM; mode < SPEC_N; mode++) {
        e = make_engine(f, mode);
        for (int s = 0; s < 6; s++) {
            run_t got;
            generate(e, &f->vocab, PROMPT, g, NULL, (uint64_t)s * 3, 200, &got);
            assert_int_equal(got.n, want[s].n);
            assert_memory_equal(got.ids, want[s].ids, (size_t)got.n * sizeof got.ids[0]);
            assert_memory_equal(got.lp, want[s].lp, (size_t)got.n * sizeof got.lp[0]);
            assert_memory_equal(got.n_top, want[s].n_top, (size_t)got.n * sizeof got.n_top[0]);
        }
        engine_snapshot_t snap = {0};
        assert_int_equal(engine_snapshot(e, &snap, NULL), 0);
        if (mode == SPEC_NGRAM_GARBLE_CUT)
            assert_true(snap.grammar_drafts_cut > 0);
        if (mode == SPEC_NGRAM_GARBLE_UNCUT) {
            assert_int_equal(snap.grammar_drafts_cut, 0);
            assert_true(snap.spec_verified > snap.spec_accepted); /* verification met the garbled drafts */
        }
        if (mode != SPEC_MODEL)
            assert_true(snap.spec_drafted > 0);
        engine_snapshot_free(&snap);
        engine_destroy(e);
    }
    grammar_unref(g);
}

/* A lazy grammar: free text until the trigger, the grammar from it on. */
static void test_lazy_trigger(void **state)
{
    fixture_t *f = *state;
    grammar_t *g = compile();
    engine_t *e = make_engine(f, SPEC_NONE);
    int n_triggered = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        run_t run;
        generate(e, &f->vocab, "{ { { {", g, "{", seed, 160, &run);
        run.text[run.n_text] = 0;
        const char *at = strchr(run.text, '{');
        if (!at)
            continue;
        n_triggered++;
        /* from the trigger: the grammar's text, whole or cut by max_tokens */
        if (run.finish == ENGINE_FINISH_STOP && !matches(REGEX, at))
            fail_msg("seed %llu: after the trigger: %s", (unsigned long long)seed, at);
    }
    assert_true(n_triggered > 0);
    engine_destroy(e);
    grammar_unref(g);
}

/* Steering toward closing: an unbounded string and list still close
 * before max_tokens, every time, even at a high temperature. */
static void test_closes_within_budget(void **state)
{
    fixture_t *f = *state;
    static const char gbnf[] = "root ::= \"{\\\"t\\\":\\\"\" [a-z ]* \"\\\",\\\"n\\\":[\" "
                               "[0-9]+ (\",\" [0-9]+)* \"]}\"\n";
    err_t err;
    grammar_t *g = grammar_from_gbnf(gbnf, strlen(gbnf), &err);
    if (!g)
        fail_msg("gbnf: %s", err.msg);
    engine_t *e = make_engine(f, SPEC_NGRAM);
    for (uint64_t seed = 1; seed <= 30; seed++) {
        run_t run;
        int max_tokens = 18 + (int)(seed % 5) * 9; /* the shortest answer is 16 bytes, and the end token */
        generate(e, &f->vocab, "{\"t\":\"abc def\",\"n\":[1,2]}", g, NULL, seed, max_tokens, &run);
        run.text[run.n_text] = 0;
        if (run.finish != ENGINE_FINISH_STOP ||
            !matches("^\\{\"t\":\"[a-z ]*\",\"n\":\\[[0-9]+(,[0-9]+)*\\]\\}$", run.text))
            fail_msg("seed %llu, max_tokens %d: %s (%s)", (unsigned long long)seed, max_tokens, run.text,
                     engine_finish_name(run.finish));
        assert_true(run.n <= max_tokens);
    }
    grammar_unref(g);
    /* a value that may end anywhere ends with the budget's last token */
    g = grammar_from_gbnf("root ::= [1-9] [0-9]*", 21, &err);
    assert_non_null(g);
    for (uint64_t seed = 1; seed <= 20; seed++) {
        run_t run;
        generate(e, &f->vocab, "12345678901234567890", g, NULL, seed, 2 + (int)(seed % 4), &run);
        run.text[run.n_text] = 0;
        if (run.finish != ENGINE_FINISH_STOP || !matches("^[1-9][0-9]*$", run.text))
            fail_msg("seed %llu: %s (%s)", (unsigned long long)seed, run.text, engine_finish_name(run.finish));
    }
    engine_destroy(e);
    grammar_unref(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_follows_grammar),
        cmocka_unit_test(test_speculation_keeps_output),
        cmocka_unit_test(test_lazy_trigger),
        cmocka_unit_test(test_closes_within_budget),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
