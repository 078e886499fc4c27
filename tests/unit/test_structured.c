/* The chat output parser (server/structured.c): Qwen3's reasoning block and
 * tool calls taken out of the text, whole and fed in every split (a byte
 * at a time included) with the same result; text that only looks like a
 * call stays content. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/structured.h"

typedef struct parsed {
    char reasoning[1024], content[1024];
    size_t n_reasoning, n_content;
    char calls[8][256]; /* "name|arguments" */
    int n_calls;
} parsed_t;

static void take(parsed_t *out, const out_parser_t *p, const out_delta_t *d)
{
    memcpy(out->reasoning + out->n_reasoning, d->reasoning ? d->reasoning : "", d->n_reasoning);
    out->n_reasoning += d->n_reasoning;
    memcpy(out->content + out->n_content, d->content ? d->content : "", d->n_content);
    out->n_content += d->n_content;
    for (int i = d->first_call; i < d->first_call + d->n_new_calls; i++)
        snprintf(out->calls[out->n_calls++], sizeof out->calls[0], "%s|%s", p->calls[i].name, p->calls[i].arguments);
}

/* Parses text in pieces of `step` bytes (0: whole). */
static void parse(const char *text, bool has_tools, bool is_thinking, size_t step, parsed_t *out)
{
    memset(out, 0, sizeof *out);
    structured_req_t sr = {.has_tools = has_tools, .is_thinking = is_thinking};
    out_parser_t p;
    out_parser_init(&p, &sr);
    size_t n = strlen(text), at = 0;
    out_delta_t d;
    while (step && at < n) {
        size_t k = n - at < step ? n - at : step;
        out_parser_feed(&p, text + at, k, false, &d);
        take(out, &p, &d);
        out_delta_free(&d);
        at += k;
    }
    out_parser_feed(&p, text + at, n - at, true, &d);
    take(out, &p, &d);
    out_delta_free(&d);
    out_parser_free(&p);
}

static void expect(const char *text, bool has_tools, bool is_thinking, const char *reasoning, const char *content,
                   int n_calls, const char *const *calls)
{
    for (size_t step = 0; step <= strlen(text) + 1; step++) {
        parsed_t got;
        parse(text, has_tools, is_thinking, step, &got);
        got.reasoning[got.n_reasoning] = got.content[got.n_content] = 0;
        if (strcmp(got.reasoning, reasoning) || strcmp(got.content, content) || got.n_calls != n_calls)
            fail_msg("step %zu of '%s': reasoning '%s' content '%s' calls %d", step, text, got.reasoning, got.content,
                     got.n_calls);
        for (int i = 0; i < n_calls; i++)
            assert_string_equal(got.calls[i], calls[i]);
    }
}

static void test_reasoning(void **state)
{
    (void)state;
    expect("<think>\nI should greet.\nTwice.\n</think>\n\nHello there", false, true, "I should greet.\nTwice.",
           "Hello there", 0, NULL);
    expect("<think>\n\n</think>\n\nHi", false, true, "", "Hi", 0, NULL);
    expect("Hello <think> stays", false, true, "", "Hello <think> stays", 0, NULL); /* not at the start */
    expect("<think>\nno end", false, true, "no end", "", 0, NULL);                  /* cut off while thinking */
    expect("<think>\nx\n</think>\n\nHi", false, false, "", "<think>\nx\n</think>\n\nHi", 0, NULL); /* off */
    expect("<thin", false, true, "", "<thin", 0, NULL);
}

static void test_tool_calls(void **state)
{
    (void)state;
    static const char *const two[] = {"get_weather|{\"city\":\"Paris\"}", "get_time|{\"tz\":\"CET\",\"h\":[1,2]}"};
    expect("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
           "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\", \"h\": [1, 2]}}\n</tool_call>",
           true, false, "", "", 2, two);
    static const char *const one[] = {"f|{}"};
    expect("Let me look.\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", true, true, "",
           "Let me look.\n\n", 1, one);
    static const char *const str_args[] = {"f|{\"a\":1}"};
    expect("<tool_call>{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}</tool_call>", true, false, "", "", 1, str_args);
    /* reasoning, then a call */
    expect("<think>\nneed data\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", true,
           true, "need data", "", 1, one);
    /* not a call: the text comes back as it was */
    expect("<tool_call>\nnot json\n</tool_call> after", true, false, "", "<tool_call>\nnot json\n</tool_call> after", 0,
           NULL);
    expect("<tool_call>\n{\"name\": 3, \"arguments\": {}}\n</tool_call>", true, false, "",
           "<tool_call>\n{\"name\": 3, \"arguments\": {}}\n</tool_call>", 0, NULL);
    /* cut off inside a call (max_tokens) */
    expect("<tool_call>\n{\"name\": \"f\", \"argu", true, false, "", "<tool_call>\n{\"name\": \"f\", \"argu", 0, NULL);
    /* without tools, tags are text */
    expect("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", false, false, "",
           "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", 0, NULL);
    expect("a <tool_ b", true, false, "", "a <tool_ b", 0, NULL);
    /* a body with near-misses of the closing tag, in every split */
    static const char *const near[] = {"f|{\"s\":\"</tool_ca</tool_callx</\"}"};
    expect("<tool_call>{\"name\":\"f\",\"arguments\":{\"s\":\"</tool_ca</tool_callx</\"}}</tool_call>", true, false, "",
           "", 1, near);
}

/* A long call fed a few bytes at a time: each piece scans only what it
 * added and the few bytes before it that could begin </tool_call>, not the
 * whole body held so far (which made a long call cost O(n^2)). */
static void test_long_call_linear(void **state)
{
    (void)state;
    enum { LEN = 20000, PIECE = 3 };
    static char text[LEN + 128];
    int k = sprintf(text, "<tool_call>\n{\"name\": \"w\", \"arguments\": {\"t\": \"");
    for (int i = 0; i < LEN; i++)
        text[k + i] = "ab </tool_cal"[i % 13]; /* near-misses all along */
    k += LEN;
    k += sprintf(text + k, "\"}}\n</tool_call>tail");
    structured_req_t sr = {.has_tools = true};
    out_parser_t p;
    out_delta_t d;
    out_parser_init(&p, &sr);
    size_t n = (size_t)k, n_close = strlen("</tool_call>"), n_content = 0;
    for (size_t at = 0; at < n; at += PIECE) {
        out_parser_feed(&p, text + at, n - at < PIECE ? n - at : PIECE, false, &d);
        n_content += d.n_content;
        out_delta_free(&d);
        if (p.n_calls == 0 && p.n_hold > 64) /* inside the call's body */
            assert_true(p.n_call_clear + n_close - 1 >= p.n_hold);
    }
    out_parser_feed(&p, "", 0, true, &d);
    n_content += d.n_content;
    out_delta_free(&d);
    assert_int_equal(p.n_calls, 1);
    assert_string_equal(p.calls[0].name, "w");
    assert_int_equal(strlen(p.calls[0].arguments), LEN + strlen("{\"t\":\"\"}"));
    assert_int_equal(n_content, strlen("tail"));
    out_parser_free(&p);
}

/* An empty answer (a token that renders as nothing, then max_tokens) is
 * empty in every mode; the parser's buffer was never allocated (UBSan in
 * CI caught a memmove from NULL here). */
static void test_empty(void **state)
{
    (void)state;
    for (int tools = 0; tools < 2; tools++)
        for (int thinking = 0; thinking < 2; thinking++)
            expect("", tools, thinking, "", "", 0, NULL);
}

static int count_think(const char *const *tokens, int n)
{
    think_counter_t tc = {0};
    for (int i = 0; i < n; i++)
        think_counter_feed(&tc, tokens[i], strlen(tokens[i]));
    return tc.n;
}

/* Reasoning tokens are counted as generated: up to the token completing
 * </think>, tags split across tokens, a held-back token (no text) counted
 * where the answer is; an answer without <think> counts none. */
static void test_think_counter(void **state)
{
    (void)state;
    const char *split[] = {"<th", "ink>", "a", "b</", "think>", "x", "y"};
    assert_int_equal(count_think(split, 7), 5);
    const char *held[] = {"", "<think>\n", "", "ok", "<</think>\n\n", "answer"};
    assert_int_equal(count_think(held, 6), 5);
    const char *open[] = {"<think>", "still", " thinking"};
    assert_int_equal(count_think(open, 3), 3);
    const char *plain[] = {"<thin", "g>", "</think>"};
    assert_int_equal(count_think(plain, 3), 0);
    const char *none[] = {"hello", "<think>"};
    assert_int_equal(count_think(none, 2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reasoning), cmocka_unit_test(test_tool_calls),    cmocka_unit_test(test_long_call_linear),
        cmocka_unit_test(test_empty),     cmocka_unit_test(test_think_counter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
