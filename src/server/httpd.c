/* The HTTP/1.1 connection layer (httpd.h): the listening thread accepts,
 * registers each connection with the deadline watchdog (http_guard.c) and
 * starts its thread; the connection's thread serves requests one after the
 * other (keep-alive, pipelined bytes stay in its buffer for the next one)
 * and is joined by the listener once it ends, or by httpd_stop. */
#include "server/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/thread.h"
#include "server/httpd_conn.h"
#include "server/internal.h"

struct httpd {
    httpd_config_t cfg;
    int lfd;
    int wake[2]; /* a byte here stops the listener */
    pthread_t thread;
    pthread_mutex_t mu; /* the connection list, each one's fd and is_finished */
    http_conn_t *conns;
    int n_conns;
    int port;
    atomic_int_fast64_t logged_s; /* when a connection thread's failure was last logged */
};

static void conn_free(http_conn_t *c)
{
    http_head_free(&c->head);
    free(c->head_buf);
    free(c->in);
    free(c->body);
    free(c);
}

static void *conn_main(void *arg)
{
    http_conn_t *c = arg;
    while (httpd_serve_one(c)) {
    }
    guard_close(c->d->cfg.guard, c->ge); /* out of the watchdog's list before the number can be reused */
    pthread_mutex_lock(&c->d->mu);
    close(c->fd);
    c->fd = -1;
    c->is_finished = true;
    pthread_mutex_unlock(&c->d->mu);
    return NULL;
}

/* Joins and frees the connections whose threads have ended (all of them
 * when is_all, after their sockets were shut down). */
static void reap(httpd_t *d, bool is_all)
{
    for (;;) {
        pthread_mutex_lock(&d->mu);
        http_conn_t *c = d->conns;
        while (c && !is_all && !c->is_finished)
            c = c->next;
        if (c) {
            if (c->prev)
                c->prev->next = c->next;
            else
                d->conns = c->next;
            if (c->next)
                c->next->prev = c->prev;
            d->n_conns--;
        }
        pthread_mutex_unlock(&d->mu);
        if (!c)
            return;
        pthread_join(c->thread, NULL);
        conn_free(c);
    }
}

/* A connection whose thread cannot start (its stack is address space, scarce
 * under `ulimit -v`) is closed unanswered; the log says why, at most once a
 * second. */
static void log_no_thread(httpd_t *d, const err_t *err)
{
    int64_t now_s = clock_now_ns() / 1000000000LL, last = atomic_load(&d->logged_s);
    if (now_s == last || !atomic_compare_exchange_strong(&d->logged_s, &last, now_s))
        return;
    fprintf(stderr, "splash serve: a connection was closed unanswered: %s\n", err->msg);
}

static void open_conn(httpd_t *d, int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* each stream chunk goes out at once */
    struct timeval tv = {.tv_sec = HTTPD_WRITE_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* a client that stops reading */
    http_conn_t *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    c->d = d;
    c->fd = fd;
    c->ge = guard_open(d->cfg.guard, fd, &c->is_overflow);
    pthread_mutex_lock(&d->mu);
    c->next = d->conns;
    if (d->conns)
        d->conns->prev = c;
    d->conns = c;
    d->n_conns++;
    err_t err = {0};
    if (thread_start(&c->thread, conn_main, c, "a connection thread", &err)) {
        d->conns = c->next;
        if (c->next)
            c->next->prev = NULL;
        d->n_conns--;
        pthread_mutex_unlock(&d->mu);
        guard_close(d->cfg.guard, c->ge);
        close(fd);
        conn_free(c);
        log_no_thread(d, &err);
        return;
    }
    pthread_mutex_unlock(&d->mu);
}

static void *listener(void *arg)
{
    httpd_t *d = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = d->lfd, .events = POLLIN}, {.fd = d->wake[0], .events = POLLIN}};
        int n = poll(p, 2, 1000);
        reap(d, false);
        if (n > 0 && p[1].revents)
            return NULL;
        if (n <= 0 || !(p[0].revents & POLLIN))
            continue;
        int fd = accept4(d->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
                poll(NULL, 0, 10); /* out of descriptors: let connections end rather than spin */
            continue;
        }
        pthread_mutex_lock(&d->mu);
        bool is_full = d->n_conns >= d->cfg.max_open + d->cfg.max_overflow;
        pthread_mutex_unlock(&d->mu);
        if (is_full)
            close(fd);
        else
            open_conn(d, fd);
    }
}

static int bind_socket(const httpd_config_t *cfg, err_t *err)
{
    struct sockaddr_storage addr;
    memset(&addr, 0, sizeof addr);
    struct sockaddr_in *a4 = (struct sockaddr_in *)&addr;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&addr;
    socklen_t len;
    if (inet_pton(AF_INET, cfg->host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)cfg->port);
        len = sizeof *a4;
    } else if (inet_pton(AF_INET6, cfg->host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)cfg->port);
        len = sizeof *a6;
    } else {
        err_set(err, "--host '%s' is not an IPv4 or IPv6 address", cfg->host);
        return -1;
    }
    int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        err_set(err, "cannot open a socket for %s:%d: %s", cfg->host, cfg->port, strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (addr.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&addr, len) || listen(fd, SOMAXCONN)) {
        err_set(err, "cannot listen on %s:%d (%s)", cfg->host, cfg->port, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

httpd_t *httpd_start(const httpd_config_t *cfg, err_t *err)
{
    httpd_t *d = calloc(1, sizeof *d);
    if (!d) {
        err_set(err, "out of memory for the HTTP layer");
        return NULL;
    }
    d->cfg = *cfg;
    d->lfd = bind_socket(cfg, err);
    if (d->lfd < 0) {
        free(d);
        return NULL;
    }
    struct sockaddr_storage a;
    socklen_t alen = sizeof a;
    getsockname(d->lfd, (struct sockaddr *)&a, &alen);
    d->port =
        ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port : ((struct sockaddr_in *)&a)->sin_port);
    if (pipe2(d->wake, O_CLOEXEC)) {
        err_set(err, "cannot make the HTTP listener's wake pipe: %s", strerror(errno));
        close(d->lfd);
        free(d);
        return NULL;
    }
    pthread_mutex_init(&d->mu, NULL);
    if (thread_start(&d->thread, listener, d, "the HTTP listening thread", err)) {
        close(d->lfd);
        close(d->wake[0]);
        close(d->wake[1]);
        pthread_mutex_destroy(&d->mu);
        free(d);
        return NULL;
    }
    return d;
}

int httpd_port(const httpd_t *d)
{
    return d->port;
}

void httpd_stop(httpd_t *d)
{
    if (!d)
        return;
    char b = 1;
    while (write(d->wake[1], &b, 1) < 0 && errno == EINTR) {
    }
    pthread_join(d->thread, NULL);
    close(d->lfd);
    pthread_mutex_lock(&d->mu);
    for (http_conn_t *c = d->conns; c; c = c->next)
        if (c->fd >= 0)
            shutdown(c->fd, SHUT_RDWR); /* its thread reads the end, or its write fails */
    pthread_mutex_unlock(&d->mu);
    reap(d, true);
    close(d->wake[0]);
    close(d->wake[1]);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

uint64_t httpd_max_body(const http_conn_t *c)
{
    return c->d->cfg.max_body;
}

const httpd_handler_t *httpd_handler(const http_conn_t *c)
{
    return &c->d->cfg.handler;
}

guard_t *httpd_guard(const http_conn_t *c)
{
    return c->d->cfg.guard;
}
