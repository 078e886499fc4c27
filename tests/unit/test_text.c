/* Byte-level mapping, vocabulary loading and streaming detokenisation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/gguf.h"
#include "text/bytelevel.h"
#include "text/detok.h"
#include "text/vocab.h"
#include "tools/synth.h"

/* Known points of the GPT-2 mapping, and that it is a bijection. */
static void test_bytelevel(void **state)
{
    (void)state;
    assert_int_equal(bytelevel_cp('A'), 'A');
    assert_int_equal(bytelevel_cp(' '), 0x120);  /* 'Ġ' */
    assert_int_equal(bytelevel_cp('\n'), 0x10A); /* 'Ċ' */
    assert_int_equal(bytelevel_cp(0), 0x100);
    assert_int_equal(bytelevel_cp(0x7F), 0x121);
    assert_int_equal(bytelevel_cp(0xAD), 0x143); /* the soft hyphen is the last remapped byte */
    int seen[324] = {0};
    for (int b = 0; b < 256; b++) {
        uint32_t cp = bytelevel_cp((uint8_t)b);
        assert_true(cp < 324);
        assert_int_equal(seen[cp]++, 0);
        assert_int_equal(bytelevel_byte(cp), b);
        char s[3];
        size_t n = bytelevel_encode((uint8_t)b, s);
        uint32_t back;
        assert_int_equal(utf8_decode(s, n, &back), n);
        assert_int_equal(back, cp);
    }
    assert_int_equal(bytelevel_byte(0x20), -1); /* space is never spelled as itself */
    assert_int_equal(bytelevel_byte(0x144), -1);
}

static void test_utf8_decode(void **state)
{
    (void)state;
    uint32_t cp;
    assert_int_equal(utf8_decode("\xe2\x82\xac", 3, &cp), 3);
    assert_int_equal(cp, 0x20AC);
    assert_int_equal(utf8_decode("\xe2\x82", 2, &cp), 0);         /* incomplete */
    assert_int_equal(utf8_decode("\xc0\x80", 2, &cp), 0);         /* overlong */
    assert_int_equal(utf8_decode("\xed\xa0\x80", 3, &cp), 0);     /* surrogate */
    assert_int_equal(utf8_decode("\xf4\x90\x80\x80", 4, &cp), 0); /* > U+10FFFF */
}

typedef struct fixture {
    char path[64];
    gguf_t *g;
    vocab_t v;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    err_t err;
    snprintf(f->path, sizeof f->path, "/tmp/splash-test-text-XXXXXX");
    int fd = mkstemp(f->path);
    close(fd);
    model_config_t c;
    synth_preset("tiny", &c, &err);
    c.n_layers = 1;
    if (synth_write(f->path, "t", &c, 0, 1, 0.0f, NULL, NULL, NULL, NULL, &err))
        fail_msg("%s", err.msg);
    f->g = gguf_open(f->path, &err);
    assert_non_null(f->g);
    if (vocab_load(&f->v, f->g, c.vocab, &err))
        fail_msg("%s", err.msg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    vocab_free(&f->v);
    gguf_close(f->g);
    unlink(f->path);
    free(f);
    return 0;
}

static void test_vocab(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(f->v.n_tokens, 512);
    assert_int_equal(f->v.eos_id, 258);
    assert_int_equal(f->v.types[257], TOKEN_TYPE_CONTROL);
    for (int b = 0; b < 256; b++)
        assert_true(f->v.byte_token[b] >= 0);
    /* every byte string survives encode then decode */
    char text[256];
    for (int i = 0; i < 256; i++)
        text[i] = (char)i;
    int32_t ids[256];
    for (int i = 0; i < 256; i++)
        ids[i] = f->v.byte_token[(uint8_t)text[i]];
    char back[8];
    for (int i = 0; i < 256; i++) {
        assert_int_equal(vocab_token_bytes(&f->v, ids[i], back, sizeof back), 1);
        assert_int_equal((uint8_t)back[0], i);
    }
    assert_int_equal(vocab_token_bytes(&f->v, 257, back, sizeof back), 8); /* "<|im_st" cut at cap */
    assert_int_equal(vocab_token_bytes(&f->v, 9999, back, sizeof back), 0);
    /* a mismatch between vocabulary and embedding rows is refused */
    vocab_t other;
    err_t err;
    assert_int_equal(vocab_load(&other, f->g, 511, &err), -1);
    assert_non_null(strstr(err.msg, "token_embd"));
}

/* A multi-byte character split across tokens comes out whole, once. */
static void test_detok_holds_partial_utf8(void **state)
{
    fixture_t *f = *state;
    const char *s = "a\xe2\x82\xac"
                    "b\xf0\x9f\x98\x80\xff"
                    "c";
    size_t n = strlen(s);
    int32_t ids[32];
    for (size_t i = 0; i < n; i++)
        ids[i] = f->v.byte_token[(uint8_t)s[i]];
    detok_t d;
    detok_init(&d, &f->v);
    char out[DETOK_MAX_TOKEN_BYTES + 8], all[64];
    size_t total = 0;
    size_t emitted_at[32];
    for (size_t i = 0; i < n; i++) {
        size_t k = detok_push(&d, ids[i], out);
        memcpy(all + total, out, k);
        total += k;
        emitted_at[i] = total;
    }
    total += detok_flush(&d, all + total);
    assert_int_equal(total, n);
    assert_memory_equal(all, s, n);
    assert_int_equal(emitted_at[1], 1); /* after 0xe2: still only "a" */
    assert_int_equal(emitted_at[2], 1);
    assert_int_equal(emitted_at[3], 4);  /* euro sign complete */
    assert_int_equal(emitted_at[8], 9);  /* emoji complete after its 4th byte */
    assert_int_equal(emitted_at[9], 10); /* a stray 0xff is passed through, not held */
    /* an incomplete sequence at the end of the stream is flushed as it is */
    detok_init(&d, &f->v);
    int32_t id = f->v.byte_token[0xe2];
    assert_int_equal(detok_push(&d, id, out), 0);
    assert_int_equal(detok_flush(&d, out), 1);
    assert_int_equal((uint8_t)out[0], 0xe2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytelevel),
        cmocka_unit_test(test_utf8_decode),
        cmocka_unit_test_setup_teardown(test_vocab, setup, teardown),
        cmocka_unit_test_setup_teardown(test_detok_holds_partial_utf8, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
