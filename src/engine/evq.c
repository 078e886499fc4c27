/* The request event queue (evq.h). */
#include "engine/evq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *(*evq_alloc)(size_t) = malloc;

void evq_set_alloc(void *(*alloc)(size_t))
{
    evq_alloc = alloc ? alloc : malloc;
}

int evq_set_text(engine_event_t *ev, const char *text, size_t len)
{
    ev->text = evq_alloc(len + 1);
    if (!ev->text) {
        ev->text_len = 0;
        return -1;
    }
    memcpy(ev->text, text, len);
    ev->text[len] = '\0';
    ev->text_len = len;
    return 0;
}

/* Room for one more ring event: false when the ring is full and cannot grow. */
static bool make_room(evq_t *q)
{
    if (q->n < q->cap)
        return true;
    int cap = q->cap ? 2 * q->cap : EVQ_FIRST_CAP;
    engine_event_t *v = evq_alloc((size_t)cap * sizeof *v);
    if (!v)
        return false;
    for (int i = 0; i < q->n; i++)
        v[i] = q->ring[(q->head + i) % q->cap];
    free(q->ring);
    q->ring = v;
    q->head = 0;
    q->cap = cap;
    return true;
}

/* A DONE that reports success over lost events reports the loss instead. */
static void done_with_losses(evq_t *q, engine_event_t *ev)
{
    if (!q->n_lost || (ev->finish != ENGINE_FINISH_STOP && ev->finish != ENGINE_FINISH_LENGTH))
        return;
    char msg[96];
    snprintf(msg, sizeof msg, "out of memory: %d events of the answer were lost", q->n_lost);
    ev->finish = ENGINE_FINISH_ERROR;
    free(ev->message);
    size_t n = strlen(msg) + 1;
    ev->message = evq_alloc(n); /* NULL if even this fails: the finish still says ERROR */
    if (ev->message)
        memcpy(ev->message, msg, n);
}

void evq_push(evq_t *q, engine_event_t *ev, bool is_text_lost)
{
    if (is_text_lost) /* the event goes on without its text: one loss */
        q->n_lost++;
    if (ev->kind == ENGINE_EV_DONE) {
        if (q->has_done) { /* only one DONE: a second would be a bug upstream */
            engine_event_clear(ev);
            return;
        }
        done_with_losses(q, ev);
        q->done = *ev;
        q->has_done = true;
        return;
    }
    if (q->has_done || !make_room(q)) {
        q->n_lost += !q->has_done && !is_text_lost; /* counted once per event */
        engine_event_clear(ev);
        return;
    }
    q->ring[(q->head + q->n) % q->cap] = *ev;
    q->n++;
}

bool evq_pop(evq_t *q, engine_event_t *ev)
{
    if (q->n > 0) {
        *ev = q->ring[q->head];
        q->head = (q->head + 1) % q->cap;
        q->n--;
        return true;
    }
    if (q->has_done) {
        *ev = q->done;
        memset(&q->done, 0, sizeof q->done);
        q->has_done = false;
        return true;
    }
    return false;
}

bool evq_is_empty(const evq_t *q)
{
    return q->n == 0 && !q->has_done;
}

void evq_free(evq_t *q)
{
    engine_event_t ev;
    while (evq_pop(q, &ev))
        engine_event_clear(&ev);
    free(q->ring);
    memset(q, 0, sizeof *q);
}
