/* Processes splash bench owns: the arm servers it starts, health-checks and
 * stops, and the sleep inhibitor. Every child is registered so that a
 * signal or an early return still stops it; each child also gets
 * PR_SET_PDEATHSIG, so nothing outlives a bench that was killed outright. */
#ifndef SPLASH_BENCH_PROC_H
#define SPLASH_BENCH_PROC_H

#include <sched.h>
#include <stdbool.h>
#include <sys/types.h>

#include "base/err.h"
#include "tools/bench_http.h"

#define BENCH_STOP_TIMEOUT_S 60 /* SIGTERM, then this long before SIGKILL */

typedef struct bench_server {
    pid_t pid;
    char url[BENCH_URL_MAX];
    char cmd[4096];     /* the command as run (after {port} substitution) */
    char log_path[512]; /* the server's stdout and stderr */
    char binary[1200];  /* the executable the command names, resolved through PATH */
} bench_server_t;

/* Starts `cmd` with /bin/sh -c "exec cmd", its output going to log_path,
 * on the CPUs in `cpus` (inherited by every thread the server starts).
 * When cmd contains {port}, a free port replaces it and the URL is
 * http://127.0.0.1:PORT; otherwise the URL is read from the server's ready
 * line ("... ready at http://HOST:PORT ..."). Then waits for GET /ready
 * (or /health, or /v1/models for servers without it) to answer 200. */
int bench_server_start(const char *cmd, const char *log_path, int timeout_s, const char *api_key, const cpu_set_t *cpus,
                       bench_server_t *s, err_t *err);

/* SIGTERM, wait; SIGKILL after BENCH_STOP_TIMEOUT_S. *exit_status gets the
 * waitpid status rendered as a short phrase. */
int bench_server_stop(bench_server_t *s, char *how, size_t how_len);

/* Waits until GET path answers 200 (health probe of a URL arm). */
int bench_wait_healthy(const char *url, const char *api_key, int timeout_s, err_t *err);

/* Sleep inhibition for the whole run: systemd-inhibit holding a pipe; the
 * lock goes when the pipe closes (bench_inhibit_end, or bench dying). */
typedef struct bench_inhibit {
    pid_t pid;
    int fd;
    bool is_held;
    char why[256]; /* when not held: why not */
} bench_inhibit_t;

void bench_inhibit_begin(bench_inhibit_t *in);
void bench_inhibit_end(bench_inhibit_t *in);

/* SIGINT / SIGTERM to bench: stop every registered child, then exit. */
void bench_install_signal_cleanup(void);

#endif
