/* A request's pending events, between the engine thread that produces them
 * and the caller that reads them: a ring that grows by doubling, plus one
 * slot kept for DONE, so the event no caller can do without never needs
 * memory. When memory runs out, other events are dropped and counted, and
 * a DONE that would report success reports the loss instead (an answer
 * with holes must not pass for a whole one). Not thread-safe: the request's
 * mutex guards it. */
#ifndef SPLASH_ENGINE_EVQ_H
#define SPLASH_ENGINE_EVQ_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/engine.h"

#define EVQ_FIRST_CAP 16 /* ring slots at the first event */

typedef struct evq {
    engine_event_t *ring; /* (cap) events from head, n of them, wrapping */
    int head, n, cap;
    engine_event_t done; /* DONE, delivered after the ring empties */
    bool has_done;
    int n_lost; /* events (or their text) dropped for want of memory */
} evq_t;

/* Copies text into ev (ev->text, ev->text_len): 0, or -1 out of memory
 * (ev->text stays NULL). Needs no lock: call it before taking one. */
int evq_set_text(engine_event_t *ev, const char *text, size_t len);
/* Takes ownership of *ev; is_text_lost: its text could not be copied. */
void evq_push(evq_t *q, engine_event_t *ev, bool is_text_lost);
/* The oldest event, moved into *ev (false: none). */
bool evq_pop(evq_t *q, engine_event_t *ev);
bool evq_is_empty(const evq_t *q);
void evq_free(evq_t *q);

/* Tests only: the allocator evq uses (NULL: malloc), to inject failures. */
void evq_set_alloc(void *(*alloc)(size_t));

#endif
