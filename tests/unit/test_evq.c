/* The request event queue (engine/evq.h): order across growth and
 * wrap-around, and its out-of-memory paths with an allocator that fails on
 * demand: DONE always arrives, after every event that was kept and in
 * order, and reports the loss; no ring index is computed from an empty
 * ring (the old queue took a modulo by zero when the first allocation
 * failed, and an index below zero when the queue drained meanwhile). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/evq.h"

static int allocs_left; /* allocations test_alloc grants before it fails; -1: all */

static void *test_alloc(size_t n)
{
    if (allocs_left == 0)
        return NULL;
    if (allocs_left > 0)
        allocs_left--;
    return malloc(n);
}

static int setup(void **state)
{
    (void)state;
    allocs_left = -1;
    evq_set_alloc(test_alloc);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    evq_set_alloc(NULL);
    return 0;
}

/* A token event with text "t<i>"; false if its text could not be copied. */
static bool push_token(evq_t *q, int i)
{
    engine_event_t ev = {.kind = ENGINE_EV_TOKEN, .token = i};
    char text[16];
    int n = snprintf(text, sizeof text, "t%d", i);
    bool is_lost = evq_set_text(&ev, text, (size_t)n) != 0;
    evq_push(q, &ev, is_lost);
    return !is_lost;
}

static void push_done(evq_t *q, engine_finish_t why)
{
    engine_event_t ev = {.kind = ENGINE_EV_DONE, .finish = why};
    evq_push(q, &ev, false);
}

/* Pops a token event and checks it is token i with its text. */
static void expect_token(evq_t *q, int i)
{
    engine_event_t ev;
    assert_true(evq_pop(q, &ev));
    assert_int_equal(ev.kind, ENGINE_EV_TOKEN);
    assert_int_equal(ev.token, i);
    char text[16];
    snprintf(text, sizeof text, "t%d", i);
    assert_non_null(ev.text);
    assert_string_equal(ev.text, text);
    engine_event_clear(&ev);
}

static engine_event_t expect_done(evq_t *q)
{
    engine_event_t ev;
    assert_true(evq_pop(q, &ev));
    assert_int_equal(ev.kind, ENGINE_EV_DONE);
    assert_false(evq_pop(q, &(engine_event_t){0}));
    assert_true(evq_is_empty(q));
    return ev;
}

static void test_order_across_growth_and_wrap(void **state)
{
    (void)state;
    evq_t q = {0};
    assert_true(evq_is_empty(&q));
    int next_in = 0, next_out = 0;
    /* interleaved pushes and pops make the ring wrap before it grows */
    for (int round = 0; round < 20; round++) {
        for (int k = 0; k < 7; k++)
            push_token(&q, next_in++);
        for (int k = 0; k < 5; k++)
            expect_token(&q, next_out++);
    }
    push_done(&q, ENGINE_FINISH_LENGTH);
    while (next_out < next_in)
        expect_token(&q, next_out++);
    engine_event_t done = expect_done(&q);
    assert_int_equal(done.finish, ENGINE_FINISH_LENGTH);
    assert_null(done.message);
    assert_int_equal(q.n_lost, 0);
    evq_free(&q);
}

/* The very first ring allocation fails: no ring at all (cap 0), yet DONE arrives. */
static void test_first_allocation_fails(void **state)
{
    (void)state;
    evq_t q = {0};
    allocs_left = 1; /* the text copy succeeds, the ring does not */
    assert_true(push_token(&q, 0));
    assert_int_equal(q.cap, 0);
    assert_true(evq_is_empty(&q));
    allocs_left = 1; /* the loss message */
    push_done(&q, ENGINE_FINISH_STOP);
    engine_event_t done = expect_done(&q);
    assert_int_equal(done.finish, ENGINE_FINISH_ERROR);
    assert_non_null(done.message);
    assert_non_null(strstr(done.message, "1 events"));
    engine_event_clear(&done);
    evq_free(&q);
}

/* The ring is full, wrapped and partly drained when growth fails: the kept
 * events come out in order, then DONE reporting the loss. */
static void test_growth_fails_on_a_wrapped_ring(void **state)
{
    (void)state;
    evq_t q = {0};
    for (int i = 0; i < EVQ_FIRST_CAP; i++)
        push_token(&q, i);
    for (int i = 0; i < 10; i++)
        expect_token(&q, i);
    for (int i = EVQ_FIRST_CAP; i < EVQ_FIRST_CAP + 10; i++)
        push_token(&q, i);
    assert_int_equal(q.n, q.cap); /* full, and head is not at slot 0 */
    assert_int_not_equal(q.head, 0);
    allocs_left = 1; /* the text, not the larger ring */
    push_token(&q, 999);
    assert_int_equal(q.n_lost, 1);
    /* the queue drains meanwhile (the old code relocked and indexed ev_n - 1) */
    for (int i = 10; i < EVQ_FIRST_CAP + 10; i++)
        expect_token(&q, i);
    allocs_left = 0; /* not even the loss message can be allocated */
    push_done(&q, ENGINE_FINISH_LENGTH);
    engine_event_t done = expect_done(&q);
    assert_int_equal(done.finish, ENGINE_FINISH_ERROR);
    assert_null(done.message);
    evq_free(&q);
}

/* A token whose text cannot be copied counts as lost; a DONE that already
 * reports a failure (cancelled) keeps its own reason. */
static void test_lost_text_and_cancelled_done(void **state)
{
    (void)state;
    evq_t q = {0};
    allocs_left = 0;
    assert_false(push_token(&q, 0)); /* no text and no ring: lost once, not twice */
    assert_int_equal(q.n_lost, 1);
    allocs_left = -1;
    push_token(&q, 1);
    push_done(&q, ENGINE_FINISH_CANCELLED);
    expect_token(&q, 1);
    engine_event_t done = expect_done(&q);
    assert_int_equal(done.finish, ENGINE_FINISH_CANCELLED);
    assert_null(done.message);
    evq_free(&q);
}

/* Freed with events and DONE still queued: everything is released (ASan). */
static void test_free_with_pending_events(void **state)
{
    (void)state;
    evq_t q = {0};
    for (int i = 0; i < 40; i++)
        push_token(&q, i);
    push_done(&q, ENGINE_FINISH_STOP);
    push_done(&q, ENGINE_FINISH_STOP); /* a second DONE is dropped */
    evq_free(&q);
    assert_true(evq_is_empty(&q));
    assert_null(q.ring);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_order_across_growth_and_wrap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_allocation_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_growth_fails_on_a_wrapped_ring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_text_and_cancelled_done, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_with_pending_events, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
