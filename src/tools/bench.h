/* splash bench: the ABBA serving comparison (SPEC section 6). A baseline
 * arm (A) and a candidate arm (B), each a server command bench owns or the
 * URL of a running server, measured in rounds A, B, B, A over workloads
 * whose validity is checked request by request; the statistics and verdict
 * rules live in bench_stats.h, the report in bench_report.c. */
#ifndef SPLASH_BENCH_H
#define SPLASH_BENCH_H

#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "tools/bench_stats.h"

#define BENCH_MAX_ROUNDS 100
#define BENCH_MAX_LENS 16        /* serial prompt lengths */
#define BENCH_MAX_PROMPT 1000000 /* longest context bench builds */
#define BENCH_MAX_JSON_CYCLES 16 /* turns of one strict-json probe */
#define BENCH_MAX_PAIRS 1000     /* cached pairs per slot */
#define BENCH_MAX_SESSIONS 256   /* concurrent conversations (a thread each) */
#define BENCH_MAX_SESSION_TURNS 64
#define BENCH_MAX_SESSION_REPLICAS 64 /* distinct x-splash-replica values tallied */

typedef struct bench_arm_config {
    const char *cmd;         /* server command bench starts, or NULL */
    const char *url;         /* running server, or NULL */
    const char *verify_rows; /* the policy this arm declares ("off", "all", "auto") */
} bench_arm_config_t;

typedef struct bench_config {
    bench_arm_config_t arm[2]; /* [0] baseline A, [1] candidate B */
    bool is_sequential;        /* one server resident at a time */
    /* paired residency: fresh server processes for every round, so that what
     * one process happens to get (page placement, cache sets) differs from
     * round to round and shows in the rounds' spread instead of posing as a
     * difference between the arms; command arms only */
    bool is_restart_per_round;
    int rounds;
    int warmup;        /* unmeasured requests after each server start */
    int warmup_tokens; /* output budget of each (the CLI's default: min(8, max_tokens)) */
    bool do_serial, do_mixed, do_seeded, do_strict_json, do_cached, do_sessions;
    /* serial */
    int32_t serial_lens[BENCH_MAX_LENS];
    int n_serial_lens;
    int serial_repeat;
    int max_tokens;
    double serial_temperature; /* 0: greedy; above, sampled with seeds shared by both arms */
    /* mixed */
    int mixed_decode_prompt, mixed_decode_tokens;
    int mixed_long_prompt, mixed_long_tokens;
    int mixed_short_prompt, mixed_short_tokens, mixed_shorts;
    int mixed_repeat;
    /* seeded */
    int seeded_probes, seeded_prompt, seeded_tokens;
    bool expect_output_change;
    /* strict-json: probes of strict_json_cycles chat turns each, every turn
     * constrained by a built-in schema (bench_json.h) within strict_json_tokens */
    int strict_json_probes, strict_json_cycles, strict_json_tokens;
    /* cached: cached_pairs pairs per slot, each under one fresh salt: a cold
     * request over a cached_prefix_tokens prefix (the same text in every
     * pair), then the prefix plus cached_suffix_tokens new ones (a partial
     * continuation) and the prefix's cached blocks plus one token (a fully
     * cached one), each generating cached_max_tokens */
    int cached_prefix_tokens, cached_suffix_tokens, cached_pairs, cached_max_tokens;
    /* sessions: `sessions` conversations at once, each sessions_turns turns;
     * turn t's prompt extends turn t-1's by sessions_turn_tokens (or, with
     * sessions_turn_tokens_max above it, by a count between the two drawn
     * from a hash of the conversation and the turn: the same in every slot
     * and every run); one cache_salt per conversation; each turn generates
     * sessions_max_tokens */
    int sessions, sessions_turns, sessions_first_tokens, sessions_turn_tokens, sessions_turn_tokens_max,
        sessions_max_tokens;
    /* sessions' schedule, the same in every slot: conversation i sends its
     * first turn sessions_stagger_ms x i after the slot starts, and each
     * later turn sessions_think_ms after the previous answer ended (0 and
     * 0: all at once, back to back, a closed loop that saturates) */
    int sessions_stagger_ms, sessions_think_ms;
    /* sessions: each conversation sends an x-session-id that stays the same
     * in every slot of the run (a balancer routes it alike in every slot, so
     * slots compare like with like) instead of routing by its fresh salt */
    bool is_session_id_stable;
    /* the x-session-id's stem: conversation i is "<stem>-conversation-<i>"
     * in every slot and every run (the same routing run after run) */
    const char *sessions_name;
    /* which metrics decide the verdict (bit i = bench_metric i) */
    unsigned decide_mask;
    int poll_ms;
    /* --trace: every server bench starts captures an engine trace (its
     * --trace-capacity / --trace-out), validated after each stop and
     * attached to the report; a traced run gives no speed verdict */
    bool is_traced;
    int trace_capacity; /* events per server start */
    int request_timeout_s, start_timeout_s;
    const char *api_key;
    /* CPU affinity: servers bench starts run on server_cpus (both arms on the
     * same CPUs, so neither gets the faster vCPU by luck), bench itself on
     * client_cpus; unset = the CPUs bench was given. The texts are for the
     * report (NULL when unset). */
    cpu_set_t server_cpus, client_cpus;
    const char *server_cpus_text, *client_cpus_text;
    const char *work_dir;
    const char *json_out, *html_out;
    bool is_inhibit;
    bool is_quiet; /* no progress lines on stderr */
    const bench_clock_t *clock;
    const char *command_line;
} bench_config_t;

/* The metrics, in report order. */
typedef enum bench_metric {
    BM_THROUGHPUT = 0, /* useful completion tokens / s over the serial requests */
    BM_TTFT_SHORT,     /* client TTFT of the short interactive requests (mixed), ms */
    BM_TTFT_LONG,      /* client TTFT of the long-prefill request (mixed), ms */
    BM_GAP_P50,        /* streaming chunk gaps of the decode request (mixed), ms */
    BM_GAP_P90,
    BM_GAP_P99,
    BM_GAP_MAX,
    BM_MASK_NS,            /* grammar mask time per masked token (strict-json, /status deltas), ns */
    BM_TTFT_COLD,          /* client TTFT of the cold request of each cached pair, ms */
    BM_TTFT_CACHED,        /* ... of its partial continuation (cached prefix, new suffix), ms */
    BM_TTFT_CACHED_FULL,   /* ... of its fully cached continuation, ms */
    BM_SESSION_PREFILL,    /* sessions: prompt tokens a turn had to prefill (not served from the prefix cache), mean */
    BM_SESSION_TTFT,       /* ... median client TTFT of the follow-up turns (2 and later), ms */
    BM_SESSION_THROUGHPUT, /* ... completion tokens / s over the workload's wall time */
    BM_COUNT
} bench_metric_t;

typedef struct bench_metric_info {
    const char *key, *label, *unit;
    bool is_higher_better;
    bool is_default_decider;
} bench_metric_info_t;

extern const bench_metric_info_t bench_metrics[BM_COUNT];

void bench_config_default(bench_config_t *c);

/* Runs the whole comparison and writes the reports. Returns the process
 * exit status (a BENCH_EXIT_* verdict, or 1 when bench itself failed, with
 * err filled). */
int bench_run(const bench_config_t *c, err_t *err);

/* Report writers (bench_report.c), from the report JSON bench_run builds. */
int bench_write_html(const json_t *report, const char *path, err_t *err);
/* The JSON report, written crash-safe (base/atomic_file.h). */
int bench_write_json(const json_t *report, const char *path, err_t *err);
void bench_print_summary(const json_t *report, FILE *f);

#endif
