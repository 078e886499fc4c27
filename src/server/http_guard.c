/* Connection deadlines and the connection count. libmicrohttpd's own
 * connection timeout restarts on every byte, so a client that trickles one
 * header line every few seconds keeps its connection (and its thread) for
 * ever. Here every connection carries a total deadline for its current
 * phase: the request head (from the connection's start, or from the end of
 * the previous request on a kept-alive connection), then the body. A
 * watchdog thread shuts down the socket of a connection past its deadline;
 * libmicrohttpd's connection thread then sees the end of the stream and
 * closes the connection itself. While a request is being answered there is
 * no deadline here (generation has its own, --request-timeout).
 *
 * The registry is one mutex-guarded list. Each entry holds its own
 * duplicate of the connection's descriptor, so the socket cannot be freed
 * and its number reused while the watchdog may still shut it down, whatever
 * order libmicrohttpd closes its descriptor and reports the connection
 * closed in; shutdown() acts on the socket, so it reaches libmicrohttpd's
 * descriptor too. The duplicate is closed when the connection is reported
 * closed, after the entry left the list under the watchdog's mutex. */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
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
    int fd; /* our duplicate of the connection's socket */
    guard_phase_t phase;
    int64_t deadline_ns; /* clock_now_ns() time; 0: none (GUARD_REPLY) */
    bool is_overflow;    /* opened beyond max_open: answered 503 */
    bool is_cut;         /* the watchdog shut its socket down */
    bool is_listed;      /* in the registry (not when its descriptor was unknown) */
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
    /* the daemon has stopped: every connection reported closed */
    while (g->head) {
        guard_conn_t *e = g->head;
        g->head = e->next;
        close(e->fd);
        free(e);
    }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

uint64_t guard_n_cut(guard_t *g)
{
    return atomic_load(&g->n_cut);
}

void guard_notify(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode code)
{
    guard_t *g = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        guard_conn_t *e = calloc(1, sizeof *e);
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = e;
        if (!e || !info || (e->fd = fcntl(info->connect_fd, F_DUPFD_CLOEXEC, 0)) < 0)
            return; /* unguarded: libmicrohttpd's own idle timeout still applies */
        e->phase = GUARD_HEADERS;
        e->deadline_ns = clock_now_ns() + g->header_ns;
        e->is_listed = true;
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
        return;
    }
    guard_conn_t *e = *socket_context;
    if (!e)
        return;
    if (e->is_listed) {
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
        close(e->fd);
    }
    free(e);
    *socket_context = NULL;
}

static guard_conn_t *entry_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

void guard_set_phase(guard_t *g, struct MHD_Connection *c, guard_phase_t phase)
{
    guard_conn_t *e = entry_of(c);
    if (!e)
        return;
    int64_t now = clock_now_ns();
    pthread_mutex_lock(&g->mu);
    e->phase = phase;
    e->deadline_ns = phase == GUARD_HEADERS ? now + g->header_ns : phase == GUARD_BODY ? now + g->body_ns : 0;
    pthread_mutex_unlock(&g->mu);
}

bool guard_is_overflow(guard_t *g, struct MHD_Connection *c)
{
    const guard_conn_t *e = entry_of(c);
    if (!e)
        return false;
    pthread_mutex_lock(&g->mu);
    bool is_overflow = e->is_overflow;
    pthread_mutex_unlock(&g->mu);
    return is_overflow;
}
