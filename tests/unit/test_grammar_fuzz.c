/* Seeded fuzzing of the GBNF front-end: random mutations of valid grammars
 * and random byte strings. Nothing may crash (run under ASan / UBSan),
 * every refusal carries a message, and whatever is accepted must run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "grammar/grammar.h"

#define FUZZ_MUTATIONS 6000
#define FUZZ_RANDOM 3000
#define FUZZ_MAX_LEN 2048

static uint64_t rng_state;

static uint32_t next_u32(void)
{
    uint64_t x = rng_state; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return (uint32_t)((x * 0x2545f4914f6cdd1dull) >> 32);
}

static const char *const seeds[] = {
    "root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= [0-9]+ | \"(\" expr \")\"\n",
    "root ::= \"{\" ws (pair (\",\" ws pair)*)? \"}\"\npair ::= str \":\" ws str\n"
    "str ::= \"\\\"\" [^\"\\\\]* \"\\\"\" ws\nws ::= [ \\t\\n]*\n",
    "root ::= \"a\"{2,5} \"b\"? [x-z\\u00e9]{3} . # comment\n",
    "root ::= item*\nitem ::= \"(\" item* \")\" | \"\\x41\" | \"\\U0001F600\"\n",
    "root ::= (a | b)+\na ::= [^a-c]\nb ::= \"q\"{,3}\n",
};

/* Bytes a mutation inserts: GBNF's own syntax is the interesting part. */
static const char alphabet[] = "root::=|()[]^-\"\\*+?{},.#\n xauU0123456789Ff";

/* Returns whether the text was accepted. */
static bool exercise(const char *text, size_t len)
{
    err_t err;
    memset(&err, 0, sizeof err);
    grammar_t *g = grammar_from_gbnf(text, len, &err);
    if (!g) {
        if (!err.msg[0])
            fail_msg("refused without a message: %.*s", (int)len, text);
        return false;
    }
    /* a few random bytes through the matcher */
    gr_state_t *s = gr_state_new(g);
    assert_non_null(s);
    for (int k = 0; k < 16; k++) {
        uint8_t b = (uint8_t)(k % 2 ? next_u32() : (uint8_t)alphabet[next_u32() % (sizeof alphabet - 1)]);
        (void)gr_state_accept_bytes(s, &b, 1);
        (void)gr_state_can_end(s);
        (void)gr_state_is_done(s);
    }
    gr_state_free(s);
    grammar_unref(g);
    return true;
}

static void test_mutations(void **state)
{
    (void)state;
    rng_state = 0x9e3779b97f4a7c15ull;
    char buf[FUZZ_MAX_LEN + 1];
    int n_accepted = 0;
    for (int i = 0; i < FUZZ_MUTATIONS; i++) {
        const char *seed = seeds[next_u32() % (sizeof seeds / sizeof seeds[0])];
        size_t len = strlen(seed);
        memcpy(buf, seed, len);
        int n_mut = 1 + (int)(next_u32() % 4);
        for (int m = 0; m < n_mut; m++) {
            uint32_t op = next_u32() % 4, at = len ? next_u32() % (uint32_t)len : 0;
            if (op == 0 && len < FUZZ_MAX_LEN) { /* insert */
                memmove(buf + at + 1, buf + at, len - at);
                buf[at] = alphabet[next_u32() % (sizeof alphabet - 1)];
                len++;
            } else if (op == 1 && len) { /* delete */
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
            } else if (op == 2 && len) { /* replace with any byte */
                buf[at] = (char)next_u32();
            } else if (len) { /* duplicate a slice */
                uint32_t n = 1 + next_u32() % 16;
                if (at + n > len)
                    n = (uint32_t)len - at;
                if (len + n <= FUZZ_MAX_LEN) {
                    memmove(buf + at + n, buf + at, len - at);
                    len += n;
                }
            }
        }
        buf[len] = '\0';
        n_accepted += exercise(buf, len);
    }
    /* both sides of the parser were reached */
    assert_true(n_accepted > FUZZ_MUTATIONS / 20);
    assert_true(n_accepted < FUZZ_MUTATIONS - FUZZ_MUTATIONS / 20);
}

static void test_random_bytes(void **state)
{
    (void)state;
    rng_state = 0x2545f4914f6cdd1dull;
    char buf[FUZZ_MAX_LEN];
    for (int i = 0; i < FUZZ_RANDOM; i++) {
        size_t len = next_u32() % 256;
        bool is_syntax = i % 2;
        for (size_t k = 0; k < len; k++)
            buf[k] = is_syntax ? alphabet[next_u32() % (sizeof alphabet - 1)] : (char)next_u32();
        if (i % 3 == 0 && len > 9) /* often a rule head, so bodies get parsed */
            memcpy(buf, "root ::= ", 9);
        exercise(buf, len);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_random_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
