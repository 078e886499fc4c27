/* Connection deadlines and the connection count. A read timeout that
 * restarts on every byte would let a client that trickles one header line
 * every few seconds keep its connection (and its thread) for ever. Here
 * every connection carries a total deadline for its current phase: the
 * request head (from the connection's start, or from the end of the
 * previous request on a kept-alive connection), then the body. A watchdog
 * thread shuts down the socket of a connection past its deadline; the
 * connection's thread then reads the end of the stream and closes it. While
 * a request is being answered there is no deadline here (generation has its
 * own, --request-timeout).
 *
 * The registry is one mutex-guarded list. The connection layer (httpd.c)
 * takes its entry out of the list (guard_close) before it closes the
 * socket, so the watchdog never shuts down a descriptor number that has
 * been reused. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/thread.h"
#include "server/internal.h"

#define GUARD_TICK_NS 100000000LL /* how often the watchdog looks */

typedef struct guard_conn {
    struct guard_conn *prev, *next;
    int fd; /* the connection's socket */
    guard_phase_t phase;
    int64_t deadline_ns; /* clock_now_ns() time; 0: none (GUARD_REPLY) */
    bool is_overflow;    /* opened beyond max_open: answered 503 */
    bool is_cut;         /* the watchdog shut its socket down */
} guard_conn_t;

struct guard {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled to stop the watchdog */
    pthread_t thread;
    bool is_stopping;
    guard_conn_t *head;
    int n_open; /* connections within max_open */
    int max_open;
    int64_t header_ns, body_ns;
    atomic_uint_fast64_t n_cut;
};

static void *watchdog(void *arg)
{
    guard_t *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->is_stopping) {
        int64_t now = clock_now_ns();
        for (guard_conn_t *e = g->head; e; e = e->next) {
            if (e->is_cut || !e->deadline_ns || now < e->deadline_ns)
                continue;
            shutdown(e->fd, SHUT_RDWR); /* wakes the connection's thread: it reads the end and closes */
            e->is_cut = true;
            atomic_fetch_add(&g->n_cut, 1);
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t t = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + GUARD_TICK_NS;
        ts.tv_sec = (time_t)(t / 1000000000LL);
        ts.tv_nsec = (long)(t % 1000000000LL);
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

guard_t *guard_create(int max_open, int header_timeout_s, int body_timeout_s, err_t *err)
{
    guard_t *g = calloc(1, sizeof *g);
    if (!g) {
        err_set(err, "out of memory for the connection watchdog");
        return NULL;
    }
    g->max_open = max_open;
    g->header_ns = (int64_t)header_timeout_s * 1000000000LL;
    g->body_ns = (int64_t)body_timeout_s * 1000000000LL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc) {
        free(g);
        err_set(err, "cannot make the connection watchdog's condition variable");
        return NULL;
    }
    pthread_mutex_init(&g->mu, NULL);
    if (thread_start(&g->thread, watchdog, g, "the connection watchdog", err)) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return NULL;
    }
    return g;
}

void guard_destroy(guard_t *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->is_stopping = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    /* the connection layer has stopped: every connection closed */
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

uint64_t guard_n_cut(guard_t *g)
{
    return atomic_load(&g->n_cut);
}

guard_conn_t *guard_open(guard_t *g, int fd, bool *is_overflow)
{
    *is_overflow = false;
    guard_conn_t *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->fd = fd;
    e->phase = GUARD_HEADERS;
    e->deadline_ns = clock_now_ns() + g->header_ns;
    pthread_mutex_lock(&g->mu);
    if (g->n_open >= g->max_open)
        e->is_overflow = true;
    else
        g->n_open++;
    e->next = g->head;
    if (g->head)
        g->head->prev = e;
    g->head = e;
    pthread_mutex_unlock(&g->mu);
    *is_overflow = e->is_overflow;
    return e;
}

void guard_close(guard_t *g, guard_conn_t *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&g->mu);
    if (!e->is_overflow)
        g->n_open--;
    if (e->prev)
        e->prev->next = e->next;
    else
        g->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    pthread_mutex_unlock(&g->mu);
    free(e);
}

void guard_set_phase(guard_t *g, guard_conn_t *e, guard_phase_t phase)
{
    if (!e)
        return;
    int64_t now = clock_now_ns();
    pthread_mutex_lock(&g->mu);
    e->phase = phase;
    e->deadline_ns = phase == GUARD_HEADERS ? now + g->header_ns : phase == GUARD_BODY ? now + g->body_ns : 0;
    pthread_mutex_unlock(&g->mu);
}
