#include "tools/bench_proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

#define BENCH_MAX_CHILDREN 16

static volatile pid_t children[BENCH_MAX_CHILDREN];

static void child_add(pid_t pid)
{
    for (int i = 0; i < BENCH_MAX_CHILDREN; i++)
        if (!children[i]) {
            children[i] = pid;
            return;
        }
}

static void child_remove(pid_t pid)
{
    for (int i = 0; i < BENCH_MAX_CHILDREN; i++)
        if (children[i] == pid)
            children[i] = 0;
}

static void on_signal(int sig)
{
    for (int i = 0; i < BENCH_MAX_CHILDREN; i++)
        if (children[i] > 0)
            kill(children[i], SIGTERM);
    _exit(128 + sig);
}

void bench_install_signal_cleanup(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int free_port(err_t *err)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return err_set(err, "socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len)) {
        close(fd);
        return err_set(err, "finding a free port: %s", strerror(errno));
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* The executable a shell command names: its first word, through PATH. */
static void resolve_binary(const char *cmd, char *out, size_t cap)
{
    out[0] = 0;
    while (*cmd == ' ' || *cmd == '\t')
        cmd++;
    /* a quoted first word ('...' or "...") is taken whole, without quotes */
    char quote = (*cmd == '\'' || *cmd == '"') ? *cmd++ : 0;
    size_t n = quote ? strcspn(cmd, quote == '\'' ? "'" : "\"") : strcspn(cmd, " \t");
    if (n == 0 || n >= cap)
        return;
    char word[512];
    snprintf(word, sizeof word, "%.*s", (int)n, cmd);
    if (strchr(word, '/')) {
        if (!realpath(word, out))
            snprintf(out, cap, "%s", word);
        return;
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t m = strcspn(path, ":");
        char cand[1100];
        snprintf(cand, sizeof cand, "%.*s/%s", (int)m, path, word);
        if (access(cand, X_OK) == 0) {
            if (!realpath(cand, out))
                snprintf(out, cap, "%s", cand);
            return;
        }
        path += m + (path[m] == ':');
    }
}

/* The URL in the ready line, if the log has it yet. */
static bool find_ready_url(const char *log_path, char *url, size_t cap)
{
    FILE *f = fopen(log_path, "r");
    if (!f)
        return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "ready at ");
        if (p) {
            p += 9;
            size_t n = strcspn(p, " \t\r\n");
            if (n && n < cap) {
                snprintf(url, cap, "%.*s", (int)n, p);
                found = true;
            }
        }
    }
    fclose(f);
    return found;
}

static int probe(bench_http_t *h)
{
    static const char *const paths[] = {"/ready", "/health", "/v1/models"};
    for (int i = 0; i < 3; i++) {
        int status = 0;
        err_t e;
        if (bench_http_get(h, paths[i], &status, NULL, &e))
            return -1; /* not listening yet */
        if (status == 200)
            return 1;
        if (status != 404)
            return 0; /* there, not ready (503 while loading) */
    }
    return 0;
}

/* Polls url until healthy or timeout_s. With *pid > 0 (a server bench
 * started), a process that exits meanwhile ends the wait at once (and is
 * reaped: *pid becomes 0) instead of after the whole timeout. */
static int wait_ready(const char *url, const char *api_key, int timeout_s, pid_t *pid, err_t *err)
{
    bench_http_t h;
    if (bench_http_init(&h, url, api_key, 10, err))
        return -1;
    int64_t deadline = clock_now_ns() + (int64_t)timeout_s * 1000000000;
    int rc = -1;
    bool is_exited = false;
    while (clock_now_ns() < deadline) {
        if (probe(&h) == 1) {
            rc = 0;
            break;
        }
        int st;
        if (pid && *pid > 0 && waitpid(*pid, &st, WNOHANG) == *pid) {
            child_remove(*pid);
            *pid = 0;
            is_exited = true;
            break;
        }
        sleep_ms(50);
    }
    bench_http_free(&h);
    if (rc && is_exited)
        err_set(err, "the server exited before %s was ready", url);
    else if (rc)
        err_set(err, "%s did not become ready within %d s", url, timeout_s);
    return rc;
}

int bench_wait_healthy(const char *url, const char *api_key, int timeout_s, err_t *err)
{
    return wait_ready(url, api_key, timeout_s, NULL, err);
}

int bench_server_start(const char *cmd, const char *log_path, int timeout_s, const char *api_key, const cpu_set_t *cpus,
                       bench_server_t *s, err_t *err)
{
    memset(s, 0, sizeof *s);
    snprintf(s->log_path, sizeof s->log_path, "%s", log_path);
    const char *ph = strstr(cmd, "{port}");
    if (ph) {
        int port = free_port(err);
        if (port < 0)
            return -1;
        snprintf(s->cmd, sizeof s->cmd, "%.*s%d%s", (int)(ph - cmd), cmd, port, ph + 6);
        snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", port);
    } else {
        snprintf(s->cmd, sizeof s->cmd, "%s", cmd);
    }
    resolve_binary(s->cmd, s->binary, sizeof s->binary);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return err_set(err, "%s: %s", log_path, strerror(errno));
    char shell[4200];
    snprintf(shell, sizeof shell, "exec %s", s->cmd);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(fd);
        return err_set(err, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (sched_setaffinity(0, sizeof *cpus, cpus)) {
            dprintf(2, "splash bench: cannot set the server's CPU affinity: %s\n", strerror(errno));
            _exit(127);
        }
        execl("/bin/sh", "sh", "-c", shell, (char *)NULL);
        _exit(127);
    }
    close(fd);
    s->pid = pid;
    child_add(pid);
    int64_t deadline = clock_now_ns() + (int64_t)timeout_s * 1000000000;
    while (!s->url[0]) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            child_remove(pid);
            s->pid = 0;
            return err_set(err, "the server exited before it was ready (see %s): %s", log_path, s->cmd);
        }
        if (find_ready_url(log_path, s->url, sizeof s->url))
            break;
        if (clock_now_ns() > deadline) {
            char how[64];
            bench_server_stop(s, how, sizeof how);
            return err_set(err, "no ready line within %d s (see %s)", timeout_s, log_path);
        }
        sleep_ms(20);
    }
    int remaining = (int)((deadline - clock_now_ns()) / 1000000000);
    if (wait_ready(s->url, api_key, remaining > 1 ? remaining : 1, &s->pid, err)) {
        char how[64];
        bench_server_stop(s, how, sizeof how);
        return err_prefix(err, "(log %s) ", log_path);
    }
    return 0;
}

static void describe_status(int st, char *how, size_t len)
{
    if (WIFEXITED(st))
        snprintf(how, len, "exited %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(how, len, "killed by signal %d", WTERMSIG(st));
    else
        snprintf(how, len, "status %d", st);
}

int bench_server_stop(bench_server_t *s, char *how, size_t how_len)
{
    if (s->pid <= 0) {
        snprintf(how, how_len, "not running");
        return 0;
    }
    kill(s->pid, SIGTERM);
    int64_t deadline = clock_now_ns() + (int64_t)BENCH_STOP_TIMEOUT_S * 1000000000;
    int st = 0;
    int rc = 0;
    for (;;) {
        pid_t r = waitpid(s->pid, &st, WNOHANG);
        if (r == s->pid || (r < 0 && errno == ECHILD))
            break;
        if (clock_now_ns() > deadline) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &st, 0);
            rc = -1;
            break;
        }
        sleep_ms(10);
    }
    describe_status(st, how, how_len);
    if (rc)
        snprintf(how + strlen(how), how_len - strlen(how), " (SIGKILL after %d s)", BENCH_STOP_TIMEOUT_S);
    child_remove(s->pid);
    s->pid = 0;
    return rc;
}

void bench_inhibit_begin(bench_inhibit_t *in)
{
    memset(in, 0, sizeof *in);
    in->fd = -1;
    if (access("/usr/bin/systemd-inhibit", X_OK) != 0) {
        snprintf(in->why, sizeof in->why, "systemd-inhibit is not installed");
        return;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC)) {
        snprintf(in->why, sizeof in->why, "pipe: %s", strerror(errno));
        return;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        snprintf(in->why, sizeof in->why, "fork: %s", strerror(errno));
        return;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127);
        dup2(p[0], 0);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        /* cat holds the lock until its stdin (our pipe) closes */
        execl("/usr/bin/systemd-inhibit", "systemd-inhibit", "--what=sleep:idle", "--who=splash bench",
              "--why=ABBA measurement in progress", "--mode=block", "cat", (char *)NULL);
        _exit(127);
    }
    close(p[0]);
    in->pid = pid;
    in->fd = p[1];
    child_add(pid);
    /* a refusal (no logind, no D-Bus) shows as an exit within moments */
    for (int i = 0; i < 25; i++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            child_remove(pid);
            close(in->fd);
            in->fd = -1;
            in->pid = 0;
            snprintf(in->why, sizeof in->why, "systemd-inhibit refused (exit %d): no logind / D-Bus here",
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1);
            return;
        }
        sleep_ms(20);
    }
    in->is_held = true;
}

void bench_inhibit_end(bench_inhibit_t *in)
{
    if (in->fd >= 0)
        close(in->fd);
    in->fd = -1;
    if (in->pid > 0) {
        int st;
        int64_t deadline = clock_now_ns() + 2000000000LL;
        while (waitpid(in->pid, &st, WNOHANG) == 0) {
            if (clock_now_ns() > deadline) {
                kill(in->pid, SIGTERM);
                waitpid(in->pid, &st, 0);
                break;
            }
            sleep_ms(10);
        }
        child_remove(in->pid);
    }
    in->pid = 0;
    in->is_held = false;
}
