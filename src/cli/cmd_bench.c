/* splash bench: flags in, bench_run (src/tools/bench.c) does the rest. */
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cli.h"
#include "cli/commands.h"
#include "tools/bench.h"

static const char bench_usage[] =
    "usage: splash bench (--baseline-cmd CMD | --baseline-url URL | --model M) [candidate] [options]\n"
    "\n"
    "ABBA serving comparison of a baseline A and a candidate B: rounds A, B, B, A over exact-length\n"
    "workloads, each request and arm checked for validity, then a verdict per metric:\n"
    "  a = mean(A1, A4), b = mean(B2, B3), noise = max(|A1-A4|/a, |B2-B3|/b),\n"
    "  change = b/a - 1 (a/b - 1 for times) so that > 0 means B is better;\n"
    "  noise > 5%% -> inconclusive; change > max(2%%, 2 x noise) -> gain; change < -max(...) -> regression.\n"
    "\n"
    "arms (each: a command bench starts and stops, or the URL of a running server):\n"
    "  --baseline-cmd CMD       shell command of the A server; {port} is replaced by a free port, otherwise\n"
    "                           the URL is read from its ready line ('ready at http://HOST:PORT')\n"
    "  --candidate-cmd CMD      the same for B\n"
    "  --baseline-url URL       an already running OpenAI-compatible server as A\n"
    "  --candidate-url URL      ... as B\n"
    "  --model FILE             shorthand: each arm without a command or URL runs\n"
    "                           '<splash> serve --model FILE --port 0 <server-args> <arm args>'\n"
    "  --splash BIN             the splash binary for that shorthand (default: this one)\n"
    "  --server-args ARGS       extra serve flags for both arms (shorthand only)\n"
    "  --baseline-args ARGS     extra serve flags for A only (e.g. '--verify-rows all')\n"
    "  --candidate-args ARGS    extra serve flags for B only\n"
    "  --baseline-verify-rows P the policy A declares, checked against /status (default off)\n"
    "  --candidate-verify-rows P the same for B\n"
    "  --api-key KEY            sent as Authorization: Bearer KEY\n"
    "schedule:\n"
    "  --residency paired|sequential  both servers resident and alternating (default), or one at a time,\n"
    "                           started for each slot\n"
    "  --rounds N               A B B A rounds, reported one by one and combined: the median round\n"
    "                           change and its noise, so a few spoilt rounds do not decide (more short\n"
    "                           rounds beat one long one; default 1)\n"
    "  --warmup N               unmeasured requests after every server start (default 2)\n"
    "  --warmup-tokens N        output budget of each warm-up request (default 8, or --max-tokens if\n"
    "                           smaller); as many as a measured request brings a server that learns\n"
    "                           as it runs (--verify-rows auto) to its steady state\n"
    "  --server-cpus LIST       run both arms' servers on these CPUs (e.g. 1 or 2-3): on a VM whose vCPUs\n"
    "                           differ in speed, the arms otherwise land on different ones by luck\n"
    "  --client-cpus LIST       run bench itself (the client) on these CPUs (default: all it was given)\n"
    "workloads (default serial,mixed,seeded):\n"
    "  --workload LIST          any of serial, mixed, seeded, strict-json, cached, sessions\n"
    "  --serial-prompt-tokens L comma-separated exact prompt lengths (default 32,128)\n"
    "  --serial-repeat N        requests per length (default 2)\n"
    "  --max-tokens N           output budget of serial requests (ignore_eos; default 32)\n"
    "  --serial-temperature T   sample serial requests at T, the k-th request of a slot with seed k in\n"
    "                           both arms (default 0, greedy): e.g. a workload whose drafts are rejected\n"
    "  --mixed-decode-prompt N / --mixed-decode-tokens N   the streaming decode (default 24 / 64)\n"
    "  --mixed-long-prompt N / --mixed-long-tokens N       the long prefill sent while it decodes (512 / 4)\n"
    "  --mixed-short-prompt N / --mixed-short-tokens N     short interactive requests (16 / 4)\n"
    "  --mixed-shorts N         short requests per repetition (default 3)\n"
    "  --mixed-repeat N         repetitions per slot (default 2)\n"
    "  --seeded-probes N / --seeded-tokens N   seeded sampling probes (default 3 / 16)\n"
    "  --strict-json-probes N   strict-json: multi-cycle chat probes over the built-in schemas (a flat\n"
    "                           object, a nested one with arrays and enums, a recursive $ref tree),\n"
    "                           each turn constrained by response_format json_schema, seeded, thinking\n"
    "                           off; every finished output is parsed and checked by bench's own schema\n"
    "                           validator (a failure makes the run invalid), outputs compared between\n"
    "                           the arms like seeded probes, mask time per token from /status deltas;\n"
    "                           a splash whose /status has no grammar object is refused; a server\n"
    "                           without /status is judged on its outputs alone (default 3)\n"
    "  --strict-json-cycles N   turns per probe, each answer sent back before the next ask (default 3)\n"
    "  --strict-json-tokens N   output budget of each turn; a turn cut off there is counted, not\n"
    "                           judged (default 256)\n"
    "  --cached-pairs N         cached (opt-in): pairs per slot, each under one fresh cache_salt: a cold\n"
    "                           request over a shared prefix (the same text in every pair; 0 cached\n"
    "                           tokens or a salt leaked), then the prefix plus new tokens (a partial\n"
    "                           continuation) and the prefix's whole KV blocks plus one token (fully\n"
    "                           cached: only the row of the first token's logits is computed); each\n"
    "                           must report exactly the reuse /status cache.block_size implies (whole\n"
    "                           blocks, never the last prompt token; without /status, reuse > 0), and\n"
    "                           /status prefill rows tell full from partial; TTFT of each kind is a\n"
    "                           metric (default 4)\n"
    "  --cached-prefix-tokens N / --cached-suffix-tokens N  the shared prefix and the partial\n"
    "                           continuation's new tokens (default 1024 / 64; at least 2 each)\n"
    "  --cached-max-tokens N    output budget of each cached request (default 8)\n"
    "  --sessions N             sessions (opt-in): conversations sent at once, a thread each, one\n"
    "                           cache_salt each (the session key a balancer hashes on; default 8)\n"
    "  --session-turns N        turns per conversation, one after another (default 4)\n"
    "  --session-first-tokens N / --session-turn-tokens N|LO-HI  the first turn's prompt and the\n"
    "                           tokens each later turn adds to the previous prompt (default 256 / 64);\n"
    "                           LO-HI: a count in that range drawn per conversation and turn, the same\n"
    "                           in every slot and run (messages of varied length, as users send)\n"
    "  --session-key id|salt    what a balancer routes a conversation by: id (default) sends an\n"
    "                           x-session-id that stays the same in every slot of the run, so each\n"
    "                           slot meets the same routing (each turn also sends an x-request-id, the\n"
    "                           id and the turn, for a balancer that scatters requests by it); salt\n"
    "                           sends neither, so a balancer falls back to the conversation's\n"
    "                           cache_salt, fresh in every slot\n"
    "  --session-name STEM      the x-session-id of conversation i is STEM-conversation-i (default\n"
    "                           splash-bench): the same in every run, so runs meet the same routing;\n"
    "                           another stem draws another routing (letters, digits, '.', '_', '-')\n"
    "  --session-max-tokens N   output budget of each turn (default 8); metrics: session_prefill (prompt\n"
    "                           tokens a turn prefilled, not cached), session_ttft (follow-up turns,\n"
    "                           p50), session_throughput (over the wall time, pauses included); the\n"
    "                           cached share, also per replica (x-splash-replica), in the report\n"
    "  --session-stagger-ms MS / --session-think-ms MS  a schedule like users' (the same in every\n"
    "                           slot): conversation i starts MS x i after the slot, and each later turn\n"
    "                           is sent a pause of 0.5-1.5 x think MS (drawn per conversation and turn)\n"
    "                           after the previous answer ended (default 0 / 0: all at once, back to\n"
    "                           back: a closed loop whose queues decide TTFT)\n"
    "  --expect-output-change   seeded and strict-json outputs may differ between A and B\n"
    "  --decide LIST            metrics that decide the verdict (default throughput,ttft_short,ttft_long,\n"
    "                           gap_p50, ttft_cached; also gap_p90, gap_p99, gap_max, mask_ns_per_token,\n"
    "                           ttft_cold, ttft_cached_full, session_prefill, session_ttft,\n"
    "                           session_throughput)\n"
    "  --poll-ms N              /status polling interval during mixed (default 5)\n"
    "  --request-timeout S      per request (default 600); --start-timeout S per server start (default 600)\n"
    "output:\n"
    "  --json FILE / --html FILE  reports (default WORKDIR/report.json and report.html)\n"
    "  --work-dir DIR           server logs and reports (default: a new /tmp/splash-bench.XXXXXX)\n"
    "  --no-inhibit             do not hold a sleep inhibitor (systemd-inhibit) while running\n"
    "  --quiet                  no progress lines on stderr\n"
    "  --trace                  diagnostic run: every server bench starts records an engine trace\n"
    "                           (--trace-capacity N --trace-out WORKDIR/trace-ARM-START.jsonl appended to\n"
    "                           its command); each capture is validated as 'splash trace report' does and\n"
    "                           attached to the report (an invalid one makes the run invalid); a server\n"
    "                           that cannot trace, or a URL arm, is refused; the verdict is 'diagnostic',\n"
    "                           never a speed verdict (exit 14)\n"
    "  --trace-capacity N       events each traced server can hold (default 1048576)\n"
    "\n"
    "exit status: 0 no change, 10 gain, 11 regression, 12 inconclusive, 13 invalid (a validity rule failed),\n"
    "14 diagnostic (--trace: valid, no speed verdict),\n"
    "1 bench could not run, 2 bad command line. Checks that need /status against a server without it are\n"
    "reported as unverifiable and named in the verdict. A third-party arm is recognised by its answers:\n"
    "llama.cpp's llama-server (GET /props with build_info) gets its own dialect (/tokenize 'content',\n"
    "cache_prompt false instead of cache_salt, cached tokens from usage or timings.cache_n).\n";

#define BENCH_CMD_MAX 4096

typedef struct bench_opts {
    bench_config_t c;
    const char *model, *splash, *server_args, *arm_args[2];
    const char *restart; /* --restart as given, or NULL */
    char cmd[2][BENCH_CMD_MAX];
    char work_dir[PATH_MAX], json[PATH_MAX + 16], html[PATH_MAX + 16];
    char splash_self[PATH_MAX];
} bench_opts_t;

static int parse_int(const char *flag, const char *v, int lo, int hi, int *out, err_t *err)
{
    int64_t x;
    if (cli_parse_i64(flag, v, lo, hi, &x, err))
        return -1;
    *out = (int)x;
    return 0;
}

/* --session-turn-tokens N or LO-HI (LO <= HI). */
static int parse_turn_tokens(const char *v, bench_config_t *c, err_t *err)
{
    const char *dash = strchr(v, '-');
    if (!dash) {
        if (parse_int("--session-turn-tokens", v, 1, BENCH_MAX_PROMPT, &c->sessions_turn_tokens, err))
            return -1;
        c->sessions_turn_tokens_max = c->sessions_turn_tokens;
        return 0;
    }
    char lo[24];
    size_t n = (size_t)(dash - v);
    if (n == 0 || n >= sizeof lo)
        return err_set(err, "--session-turn-tokens: '%s' is not N or LO-HI", v);
    memcpy(lo, v, n);
    lo[n] = 0;
    if (parse_int("--session-turn-tokens", lo, 1, BENCH_MAX_PROMPT, &c->sessions_turn_tokens, err) ||
        parse_int("--session-turn-tokens", dash + 1, 1, BENCH_MAX_PROMPT, &c->sessions_turn_tokens_max, err))
        return -1;
    if (c->sessions_turn_tokens_max < c->sessions_turn_tokens)
        return err_set(err, "--session-turn-tokens: %s's high end is below its low end", v);
    return 0;
}

/* --session-name: a header-safe stem of up to 48 characters. */
static int check_session_name(const char *v, err_t *err)
{
    size_t n = strlen(v);
    if (n == 0 || n > 48 || strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
        return err_set(err, "--session-name: '%s' is not 1-48 letters, digits, '.', '_' or '-'", v);
    return 0;
}

static int parse_workloads(const char *v, bench_config_t *c, err_t *err)
{
    c->do_serial = c->do_mixed = c->do_seeded = c->do_strict_json = c->do_cached = c->do_sessions = false;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "serial"))
            c->do_serial = true;
        else if (!strcmp(t, "mixed"))
            c->do_mixed = true;
        else if (!strcmp(t, "seeded"))
            c->do_seeded = true;
        else if (!strcmp(t, "strict-json"))
            c->do_strict_json = true;
        else if (!strcmp(t, "cached"))
            c->do_cached = true;
        else if (!strcmp(t, "sessions"))
            c->do_sessions = true;
        else
            return err_set(err, "--workload: '%s' is not serial, mixed, seeded, strict-json, cached or sessions", t);
    }
    if (!c->do_serial && !c->do_mixed && !c->do_seeded && !c->do_strict_json && !c->do_cached && !c->do_sessions)
        return err_set(err, "--workload: name at least one workload");
    return 0;
}

/* A CPU list ("3", "0-3,6"): every CPU must be one this process may run on. */
static int parse_cpus(const char *name, const char *v, cpu_set_t *out, err_t *err)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed))
        return err_set(err, "%s: cannot read this process's CPUs: %s", name, strerror(errno));
    CPU_ZERO(out);
    const char *p = v;
    for (;;) {
        char *end;
        errno = 0;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p || errno || lo < 0 || lo >= CPU_SETSIZE)
            return err_set(err, "%s: '%s' is not a CPU list such as 3 or 0-3,6", name, v);
        p = end;
        if (*p == '-') {
            hi = strtol(++p, &end, 10);
            if (end == p || errno || hi < lo || hi >= CPU_SETSIZE)
                return err_set(err, "%s: '%s' is not a CPU list such as 3 or 0-3,6", name, v);
            p = end;
        }
        for (long c = lo; c <= hi; c++) {
            if (!CPU_ISSET((int)c, &allowed))
                return err_set(err, "%s: CPU %ld is not one this process may run on", name, c);
            CPU_SET((int)c, out);
        }
        if (!*p)
            return 0;
        if (*p++ != ',')
            return err_set(err, "%s: '%s' is not a CPU list such as 3 or 0-3,6", name, v);
    }
}

static int parse_decide(const char *v, bench_config_t *c, err_t *err)
{
    c->decide_mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int m = 0;
        while (m < BM_COUNT && strcmp(bench_metrics[m].key, t))
            m++;
        if (m == BM_COUNT)
            return err_set(err, "--decide: unknown metric '%s'", t);
        c->decide_mask |= 1u << m;
    }
    return 0;
}

/* clang-format off */
#define BENCH_INT(flag, field, lo, hi) {flag, offsetof(bench_opts_t, c.field), lo, hi}
/* clang-format on */
/* The integer options, each into its bench_config_t field. */
static const cli_int_t bench_ints[] = {
    BENCH_INT("--rounds", rounds, 1, BENCH_MAX_ROUNDS),
    BENCH_INT("--warmup", warmup, 0, 1000),
    BENCH_INT("--warmup-tokens", warmup_tokens, 1, 1000000),
    BENCH_INT("--serial-repeat", serial_repeat, 1, 100000),
    BENCH_INT("--max-tokens", max_tokens, 1, 1000000),
    BENCH_INT("--mixed-decode-prompt", mixed_decode_prompt, 1, BENCH_MAX_PROMPT),
    BENCH_INT("--mixed-decode-tokens", mixed_decode_tokens, 2, 1000000),
    BENCH_INT("--mixed-long-prompt", mixed_long_prompt, 2, BENCH_MAX_PROMPT),
    BENCH_INT("--mixed-long-tokens", mixed_long_tokens, 1, 1000000),
    BENCH_INT("--mixed-short-prompt", mixed_short_prompt, 1, BENCH_MAX_PROMPT),
    BENCH_INT("--mixed-short-tokens", mixed_short_tokens, 1, 1000000),
    BENCH_INT("--mixed-shorts", mixed_shorts, 0, 10000),
    BENCH_INT("--mixed-repeat", mixed_repeat, 1, 10000),
    BENCH_INT("--seeded-probes", seeded_probes, 1, 10000),
    BENCH_INT("--seeded-tokens", seeded_tokens, 1, 1000000),
    BENCH_INT("--strict-json-probes", strict_json_probes, 1, 10000),
    BENCH_INT("--strict-json-cycles", strict_json_cycles, 1, BENCH_MAX_JSON_CYCLES),
    BENCH_INT("--strict-json-tokens", strict_json_tokens, 1, 1000000),
    BENCH_INT("--cached-prefix-tokens", cached_prefix_tokens, 2, BENCH_MAX_PROMPT),
    BENCH_INT("--cached-suffix-tokens", cached_suffix_tokens, 2, BENCH_MAX_PROMPT),
    BENCH_INT("--cached-pairs", cached_pairs, 1, BENCH_MAX_PAIRS),
    BENCH_INT("--cached-max-tokens", cached_max_tokens, 1, 1000000),
    BENCH_INT("--sessions", sessions, 1, BENCH_MAX_SESSIONS),
    BENCH_INT("--session-turns", sessions_turns, 1, BENCH_MAX_SESSION_TURNS),
    BENCH_INT("--session-first-tokens", sessions_first_tokens, 1, BENCH_MAX_PROMPT),
    BENCH_INT("--session-max-tokens", sessions_max_tokens, 1, 1000000),
    BENCH_INT("--session-stagger-ms", sessions_stagger_ms, 0, 600000),
    BENCH_INT("--session-think-ms", sessions_think_ms, 0, 600000),
    BENCH_INT("--poll-ms", poll_ms, 1, 10000),
    BENCH_INT("--trace-capacity", trace_capacity, 1024, 1 << 28),
    BENCH_INT("--request-timeout", request_timeout_s, 1, 7 * 86400),
    BENCH_INT("--start-timeout", start_timeout_s, 1, 86400),
};
#undef BENCH_INT
enum { BENCH_N_INTS = sizeof bench_ints / sizeof bench_ints[0] };

/* getopt_long's values for the options that are not integers; bench_ints'
 * follow them (O_INT + k). */
enum {
    O_BASE_CMD = 256,
    O_CAND_CMD,
    O_BASE_URL,
    O_CAND_URL,
    O_MODEL,
    O_SPLASH,
    O_SERVER_ARGS,
    O_BASE_ARGS,
    O_CAND_ARGS,
    O_BASE_VROWS,
    O_CAND_VROWS,
    O_API_KEY,
    O_SERVER_CPUS,
    O_CLIENT_CPUS,
    O_RESIDENCY,
    O_RESTART,
    O_TURN_TOKENS,
    O_SESSION_NAME,
    O_SESSION_KEY,
    O_WORKLOAD,
    O_SERIAL_LENS,
    O_SERIAL_TEMP,
    O_DECIDE,
    O_JSON,
    O_HTML,
    O_WORK_DIR,
    O_EXPECT_CHANGE,
    O_NO_INHIBIT,
    O_QUIET,
    O_TRACE,
    O_INT
};

static const struct option bench_named[] = {
    {"baseline-cmd", required_argument, NULL, O_BASE_CMD},
    {"candidate-cmd", required_argument, NULL, O_CAND_CMD},
    {"baseline-url", required_argument, NULL, O_BASE_URL},
    {"candidate-url", required_argument, NULL, O_CAND_URL},
    {"model", required_argument, NULL, O_MODEL},
    {"splash", required_argument, NULL, O_SPLASH},
    {"server-args", required_argument, NULL, O_SERVER_ARGS},
    {"baseline-args", required_argument, NULL, O_BASE_ARGS},
    {"candidate-args", required_argument, NULL, O_CAND_ARGS},
    {"baseline-verify-rows", required_argument, NULL, O_BASE_VROWS},
    {"candidate-verify-rows", required_argument, NULL, O_CAND_VROWS},
    {"api-key", required_argument, NULL, O_API_KEY},
    {"server-cpus", required_argument, NULL, O_SERVER_CPUS},
    {"client-cpus", required_argument, NULL, O_CLIENT_CPUS},
    {"residency", required_argument, NULL, O_RESIDENCY},
    {"restart", required_argument, NULL, O_RESTART},
    {"session-turn-tokens", required_argument, NULL, O_TURN_TOKENS},
    {"session-name", required_argument, NULL, O_SESSION_NAME},
    {"session-key", required_argument, NULL, O_SESSION_KEY},
    {"workload", required_argument, NULL, O_WORKLOAD},
    {"serial-prompt-tokens", required_argument, NULL, O_SERIAL_LENS},
    {"serial-temperature", required_argument, NULL, O_SERIAL_TEMP},
    {"decide", required_argument, NULL, O_DECIDE},
    {"json", required_argument, NULL, O_JSON},
    {"html", required_argument, NULL, O_HTML},
    {"work-dir", required_argument, NULL, O_WORK_DIR},
    {"expect-output-change", no_argument, NULL, O_EXPECT_CHANGE},
    {"no-inhibit", no_argument, NULL, O_NO_INHIBIT},
    {"quiet", no_argument, NULL, O_QUIET},
    {"trace", no_argument, NULL, O_TRACE},
    {NULL, 0, NULL, 0},
};

/* --serial-prompt-tokens: up to BENCH_MAX_LENS lengths. */
static int parse_serial_lens(const char *v, bench_config_t *c, err_t *err)
{
    int32_t *lens = NULL;
    int n_lens = 0;
    if (cli_parse_i32_list("--serial-prompt-tokens", v, 1, BENCH_MAX_PROMPT, &lens, &n_lens, err))
        return -1;
    if (n_lens > BENCH_MAX_LENS) {
        free(lens);
        return err_set(err, "--serial-prompt-tokens: at most %d lengths", BENCH_MAX_LENS);
    }
    memcpy(c->serial_lens, lens, (size_t)n_lens * sizeof *lens);
    c->n_serial_lens = n_lens;
    free(lens);
    return 0;
}

/* The options that pick words, lists or CPUs. */
static int parse_checked(int opt, const char *v, bench_opts_t *o, err_t *err)
{
    bench_config_t *c = &o->c;
    switch (opt) {
    case O_SERVER_CPUS: c->server_cpus_text = v; return parse_cpus("--server-cpus", v, &c->server_cpus, err);
    case O_CLIENT_CPUS: c->client_cpus_text = v; return parse_cpus("--client-cpus", v, &c->client_cpus, err);
    case O_RESIDENCY:
        if (strcmp(v, "paired") && strcmp(v, "sequential"))
            return err_set(err, "--residency: '%s' is not paired or sequential", v);
        c->is_sequential = !strcmp(v, "sequential");
        return 0;
    case O_RESTART:
        if (strcmp(v, "round") && strcmp(v, "never"))
            return err_set(err, "--restart: '%s' is not round or never", v);
        o->restart = v;
        return 0;
    case O_SESSION_KEY:
        if (strcmp(v, "id") && strcmp(v, "salt"))
            return err_set(err, "--session-key: '%s' is not id or salt", v);
        c->is_session_id_stable = !strcmp(v, "id");
        return 0;
    case O_SESSION_NAME: c->sessions_name = v; return check_session_name(v, err);
    case O_TURN_TOKENS: return parse_turn_tokens(v, c, err);
    case O_WORKLOAD: return parse_workloads(v, c, err);
    case O_SERIAL_LENS: return parse_serial_lens(v, c, err);
    case O_SERIAL_TEMP: return cli_parse_f64("--serial-temperature", v, 0.0, 100.0, &c->serial_temperature, err);
    default: return parse_decide(v, c, err); /* O_DECIDE */
    }
}

/* One option from getopt_long (opt), its value v; arg: the word it came from. */
static int parse_opt(int opt, const char *v, const char *arg, void *ctx, err_t *err)
{
    bench_opts_t *o = ctx;
    bench_config_t *c = &o->c;
    if (opt >= O_INT && opt < O_INT + BENCH_N_INTS)
        return cli_int_set(&bench_ints[opt - O_INT], v, o, err);
    switch (opt) {
    case O_BASE_CMD: c->arm[0].cmd = v; return 0;
    case O_CAND_CMD: c->arm[1].cmd = v; return 0;
    case O_BASE_URL: c->arm[0].url = v; return 0;
    case O_CAND_URL: c->arm[1].url = v; return 0;
    case O_MODEL: o->model = v; return 0;
    case O_SPLASH: o->splash = v; return 0;
    case O_SERVER_ARGS: o->server_args = v; return 0;
    case O_BASE_ARGS: o->arm_args[0] = v; return 0;
    case O_CAND_ARGS: o->arm_args[1] = v; return 0;
    case O_BASE_VROWS: c->arm[0].verify_rows = v; return 0;
    case O_CAND_VROWS: c->arm[1].verify_rows = v; return 0;
    case O_API_KEY: c->api_key = v; return 0;
    case O_JSON: snprintf(o->json, sizeof o->json, "%s", v); return 0;
    case O_HTML: snprintf(o->html, sizeof o->html, "%s", v); return 0;
    case O_WORK_DIR: snprintf(o->work_dir, sizeof o->work_dir, "%s", v); return 0;
    case O_EXPECT_CHANGE: c->expect_output_change = true; return 0;
    case O_NO_INHIBIT: c->is_inhibit = false; return 0;
    case O_QUIET: c->is_quiet = true; return 0;
    case O_TRACE: c->is_traced = true; return 0;
    case O_SERVER_CPUS:
    case O_CLIENT_CPUS:
    case O_RESIDENCY:
    case O_RESTART:
    case O_SESSION_KEY:
    case O_SESSION_NAME:
    case O_TURN_TOKENS:
    case O_WORKLOAD:
    case O_SERIAL_LENS:
    case O_SERIAL_TEMP:
    case O_DECIDE: return parse_checked(opt, v, o, err);
    case ':': return err_set(err, "%s needs a value", arg);
    default: return err_set(err, "unknown argument '%s' (splash bench --help lists the options)", arg);
    }
}

/* Each arm's command: as given, or splash serve on --model. */
static int arm_commands(bench_opts_t *o, err_t *err)
{
    bench_config_t *c = &o->c;
    for (int k = 0; k < 2; k++) {
        const char *name = k ? "candidate" : "baseline";
        if (c->arm[k].cmd && c->arm[k].url)
            return err_set(err, "give the %s either a command or a URL, not both", name);
        if (!c->arm[k].cmd && !c->arm[k].url) {
            if (!o->model)
                return err_set(err, "the %s needs --%s-cmd, --%s-url or --model", name, name, name);
            const char *bin = o->splash;
            if (!bin) {
                ssize_t n = readlink("/proc/self/exe", o->splash_self, sizeof o->splash_self - 1);
                if (n <= 0)
                    return err_set(err, "cannot find this binary; pass --splash BIN");
                o->splash_self[n] = 0;
                bin = o->splash_self;
            }
            int n = snprintf(o->cmd[k], sizeof o->cmd[k], "'%s' serve --model '%s' --port 0 %s %s", bin, o->model,
                             o->server_args ? o->server_args : "", o->arm_args[k] ? o->arm_args[k] : "");
            if (n >= (int)sizeof o->cmd[k])
                return err_set(err, "the %s command is too long", name);
            c->arm[k].cmd = o->cmd[k];
        } else if (o->arm_args[k]) {
            return err_set(err, "--%s-args goes with --model (add the flags to --%s-cmd instead)", name, name);
        }
    }
    return 0;
}

static int parse(int argc, char **argv, bench_opts_t *o, err_t *err)
{
    bench_config_t *c = &o->c;
    struct option options[sizeof bench_named / sizeof bench_named[0] + BENCH_N_INTS];
    cli_options_join(options, bench_named, bench_ints, BENCH_N_INTS, O_INT);
    if (cli_getopt(argc, argv, "", options, parse_opt, o, err))
        return -1;
    if (optind < argc)
        return err_set(err, "unknown argument '%s' (splash bench --help lists the options)", argv[optind]);
    if (arm_commands(o, err))
        return -1;
    if (c->is_traced && (c->arm[0].url || c->arm[1].url))
        return err_set(err, "--trace needs both arms as server commands bench starts: a URL arm cannot be made to "
                            "trace, nor its capture checked");
    if (c->server_cpus_text && (c->arm[0].url || c->arm[1].url))
        return err_set(err, "--server-cpus pins the servers bench starts; a URL arm's server cannot be pinned");
    if (!c->warmup_tokens)
        c->warmup_tokens = c->max_tokens < 8 ? c->max_tokens : 8;
    bool has_url = c->arm[0].url || c->arm[1].url;
    if (o->restart && c->is_sequential)
        return err_set(err, "--restart is for paired residency (sequential starts a server for every slot)");
    if (o->restart && !strcmp(o->restart, "round") && has_url)
        return err_set(err, "--restart round restarts the servers bench starts; a URL arm's server cannot be");
    c->is_restart_per_round = !c->is_sequential && !has_url && (!o->restart || !strcmp(o->restart, "round"));
    if (c->do_mixed) {
        int p[3] = {c->mixed_decode_prompt, c->mixed_long_prompt, c->mixed_short_prompt};
        if (p[0] == p[1] || p[0] == p[2] || p[1] == p[2])
            return err_set(err,
                           "the mixed prompt lengths (decode %d, long %d, short %d) must differ: /status "
                           "requests are told apart by their prompt length",
                           p[0], p[1], p[2]);
    }
    if (c->do_cached && c->cached_prefix_tokens + c->cached_suffix_tokens > BENCH_MAX_PROMPT)
        return err_set(err, "--cached-prefix-tokens %d plus --cached-suffix-tokens %d exceed the longest prompt (%d)",
                       c->cached_prefix_tokens, c->cached_suffix_tokens, BENCH_MAX_PROMPT);
    if (c->do_sessions &&
        (int64_t)c->sessions_first_tokens + (int64_t)(c->sessions_turns - 1) * c->sessions_turn_tokens_max >
            BENCH_MAX_PROMPT)
        return err_set(err, "sessions: the last turn's prompt exceeds the longest prompt (%d)", BENCH_MAX_PROMPT);
    if (c->do_serial && c->n_serial_lens == 0)
        return err_set(err, "--serial-prompt-tokens: give at least one length");
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(bench_usage, stdout);
            return 0;
        }
    static bench_opts_t o;
    memset(&o, 0, sizeof o);
    bench_config_default(&o.c);
    err_t err;
    if (parse(argc, argv, &o, &err)) {
        fprintf(stderr, "splash bench: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (!o.work_dir[0]) {
        snprintf(o.work_dir, sizeof o.work_dir, "/tmp/splash-bench.XXXXXX");
        if (!mkdtemp(o.work_dir)) {
            fprintf(stderr, "splash bench: cannot create a work directory under /tmp\n");
            return 1;
        }
    } else if (mkdir(o.work_dir, 0755) && errno != EEXIST) {
        fprintf(stderr, "splash bench: cannot create %s: %s\n", o.work_dir, strerror(errno));
        return 1;
    }
    if (!o.json[0])
        snprintf(o.json, sizeof o.json, "%s/report.json", o.work_dir);
    if (!o.html[0])
        snprintf(o.html, sizeof o.html, "%s/report.html", o.work_dir);
    o.c.work_dir = o.work_dir;
    o.c.json_out = o.json;
    o.c.html_out = o.html;
    /* the command line, for the report */
    size_t len = 0;
    static char line[8192];
    for (int i = 0; i < argc && len + 2 < sizeof line; i++)
        len += (size_t)snprintf(line + len, sizeof line - len, "%s%s", i ? " " : "splash ", argv[i]);
    o.c.command_line = line;
    if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
        fprintf(stderr, "splash bench: curl_global_init failed\n");
        return 1;
    }
    int rc = bench_run(&o.c, &err);
    if (rc == 1)
        fprintf(stderr, "splash bench: %s\n", err.msg);
    curl_global_cleanup();
    return rc;
}
