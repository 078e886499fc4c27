/* splash bench orchestration: rounds A B B A over the slots, the host
 * readings, the statistics and the report. Everything measured goes into one
 * report JSON object; the verdict comes from bench_stats.c. The arms live in
 * bench_arms.c, the request helpers and /status checks in bench_requests.c. */
#include "tools/bench_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "tools/bench_http.h"
#include "tools/bench_json.h"
#include "tools/bench_proc.h"

const bench_metric_info_t bench_metrics[BM_COUNT] = {
    {"throughput", "useful-token throughput (serial)", "tok/s", true, true},
    {"ttft_short", "TTFT short (mixed)", "ms", false, true},
    {"ttft_long", "TTFT long prefill (mixed)", "ms", false, true},
    {"gap_p50", "chunk gap p50 (mixed decode)", "ms", false, true},
    {"gap_p90", "chunk gap p90", "ms", false, false},
    {"gap_p99", "chunk gap p99", "ms", false, false},
    {"gap_max", "chunk gap max", "ms", false, false},
    {"mask_ns_per_token", "mask time per token (strict-json)", "ns", false, false},
    {"ttft_cold", "TTFT cold prefix (cached)", "ms", false, false},
    {"ttft_cached", "TTFT cached prefix (cached)", "ms", false, true},
    {"ttft_cached_full", "TTFT fully cached (cached)", "ms", false, false},
    {"session_prefill", "prefilled tokens per turn (sessions)", "tok", false, false},
    {"session_ttft", "follow-up turn TTFT p50 (sessions)", "ms", false, false},
    {"session_throughput", "useful-token throughput (sessions)", "tok/s", true, false},
};

void bench_config_default(bench_config_t *c)
{
    memset(c, 0, sizeof *c);
    c->arm[0].verify_rows = c->arm[1].verify_rows = "off";
    c->rounds = 1;
    c->warmup = 2;
    c->do_serial = c->do_mixed = c->do_seeded = true;
    c->serial_lens[0] = 32;
    c->serial_lens[1] = 128;
    c->n_serial_lens = 2;
    c->serial_repeat = 2;
    c->max_tokens = 32;
    c->mixed_decode_prompt = 24;
    c->mixed_decode_tokens = 64;
    c->mixed_long_prompt = 512;
    c->mixed_long_tokens = 4;
    c->mixed_short_prompt = 16;
    c->mixed_short_tokens = 4;
    c->mixed_shorts = 3;
    c->mixed_repeat = 2;
    c->seeded_probes = 3;
    c->seeded_prompt = 20;
    c->seeded_tokens = 16;
    c->strict_json_probes = BENCH_JSON_SCHEMAS;
    c->strict_json_cycles = 3;
    c->strict_json_tokens = 256;
    c->cached_prefix_tokens = 1024;
    c->cached_suffix_tokens = 64;
    c->cached_pairs = 4;
    c->cached_max_tokens = 8;
    c->sessions = 8;
    c->sessions_turns = 4;
    c->sessions_first_tokens = 256;
    c->sessions_turn_tokens = c->sessions_turn_tokens_max = 64;
    c->sessions_max_tokens = 8;
    c->is_session_id_stable = true;
    c->sessions_name = "splash-bench";
    for (int i = 0; i < BM_COUNT; i++)
        if (bench_metrics[i].is_default_decider)
            c->decide_mask |= 1u << i;
    c->poll_ms = 5;
    c->trace_capacity = 1 << 20;
    c->request_timeout_s = 600;
    c->start_timeout_s = 600;
    c->is_inhibit = true;
    c->clock = &bench_system_clock;
    if (sched_getaffinity(0, sizeof c->server_cpus, &c->server_cpus)) {
        CPU_ZERO(&c->server_cpus);
        for (int i = 0; i < CPU_SETSIZE; i++) /* unknown: every CPU; the kernel keeps the ones that exist */
            CPU_SET(i, &c->server_cpus);
    }
    c->client_cpus = c->server_cpus;
}

static void add_unique(json_t *arr, const char *s)
{
    size_t i;
    for (i = 0; i < json_array_size(arr); i++)
        if (!strcmp(json_string_value(json_array_get(arr, i)), s))
            return;
    json_array_append_new(arr, json_string(s));
}

void bench_unverifiable(run_t *r, const char *check)
{
    add_unique(r->unverifiable, check);
}

double bench_ms(int64_t ns)
{
    return (double)ns / 1e6;
}

void bench_new_salt(run_t *r, char *out, size_t cap)
{
    snprintf(out, cap, "splash-bench-%s-%llu", r->run_id, (unsigned long long)++r->n_salts);
}

const char *bench_arm_kind_name(bench_arm_kind_t k)
{
    return k == BENCH_ARM_SPLASH ? "splash" : k == BENCH_ARM_LLAMA_CPP ? "llama.cpp" : "other";
}

/* ---- host readings ---- */

static json_t *read_psi(void)
{
    FILE *f = fopen("/proc/pressure/memory", "r");
    if (!f)
        return json_null();
    json_t *o = json_object();
    char kind[8];
    double a10, a60, a300;
    unsigned long long total;
    while (fscanf(f, "%7s avg10=%lf avg60=%lf avg300=%lf total=%llu", kind, &a10, &a60, &a300, &total) == 5)
        json_object_set_new(
            o, kind,
            json_pack("{s:f,s:f,s:f,s:I}", "avg10", a10, "avg60", a60, "avg300", a300, "total_us", (json_int_t)total));
    fclose(f);
    return o;
}

static json_t *read_first_line(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return json_null();
    char line[512];
    json_t *v = json_null();
    if (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        json_decref(v);
        v = json_string(line);
    }
    fclose(f);
    return v;
}

static json_t *environment(void)
{
    json_t *env = json_object();
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "model name", 10)) {
                char *p = strchr(line, ':');
                if (p) {
                    p += 1 + (p[1] == ' ');
                    p[strcspn(p, "\n")] = 0;
                    json_object_set_new(env, "cpu", json_string(p));
                }
                break;
            }
        }
        fclose(f);
    }
    json_object_set_new(env, "cpus_online", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    struct utsname u;
    if (uname(&u) == 0)
        json_object_set_new(
            env, "kernel",
            json_pack("{s:s,s:s,s:s}", "sysname", u.sysname, "release", u.release, "machine", u.machine));
    json_object_set_new(env, "governor", read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"));
    json_object_set_new(env, "loadavg_start", read_first_line("/proc/loadavg"));
    json_object_set_new(env, "memory_pressure_start", read_psi());
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    json_object_set_new(env, "hostname", json_string(host));
    return env;
}

/* ---- slots and rounds ---- */

static int run_slot(run_t *r, int round, int pos, err_t *err)
{
    const bench_config_t *c = r->c;
    int ai = (pos == 0 || pos == 3) ? 0 : 1;
    arm_rt_t *a = &r->arm[ai];
    if (!a->is_running && (bench_arm_start(r, a, err) || bench_arm_warm(r, a, err)))
        return -1;
    slot_t s = {.r = r, .arm = a, .round = round, .pos = pos};
    s.j = json_object();
    s.requests = json_array();
    s.reasons = json_array();
    s.reason_requests = json_array();
    if (bench_http_init(&s.h, a->url, c->api_key, c->request_timeout_s, err))
        return -1;
    bool is_absent;
    json_t *before = bench_get_status(&s.h, &is_absent);
    if (before)
        bench_check_policy(&s, before);
    else if (a->has_status)
        bench_slot_invalid(&s, "/status failed before the arm");
    else
        bench_unverifiable(r, "policy (needs /status)");
    json_t *psi0 = read_psi();
    bench_clock_sample_t k0, k1;
    c->clock->sample(c->clock->ctx, &k0);
    s.t0_ns = clock_now_ns();
    if (c->do_serial)
        bench_workload_serial(&s);
    if (c->do_mixed)
        bench_workload_mixed(&s);
    if (c->do_seeded)
        bench_workload_seeded(&s);
    if (c->do_strict_json)
        bench_workload_strict_json(&s);
    if (c->do_cached)
        bench_workload_cached(&s);
    if (c->do_sessions)
        bench_workload_sessions(&s);
    c->clock->sample(c->clock->ctx, &k1);
    double elapsed_ms = bench_ms(clock_now_ns() - s.t0_ns);
    char why[256];
    if (bench_check_suspend(&k0, &k1, why, sizeof why))
        bench_slot_invalid(&s, "%s", why);
    json_t *after = a->has_status ? bench_wait_idle(&s) : NULL;
    if (!a->has_status)
        bench_unverifiable(r, "idle after arm (needs /status)");
    json_object_set_new(s.j, "round", json_integer(round + 1));
    json_object_set_new(s.j, "position", json_integer(pos + 1));
    char name[16];
    snprintf(name, sizeof name, "%c%d", a->label, pos + 1);
    json_object_set_new(s.j, "slot", json_string(name));
    json_object_set_new(s.j, "arm", json_string(ai ? "B" : "A"));
    json_object_set_new(s.j, "elapsed_ms", json_real(elapsed_ms));
    json_object_set_new(s.j, "clock",
                        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "boot0_ns", (json_int_t)k0.boot_ns, "mono0_ns",
                                  (json_int_t)k0.mono_ns, "wall0_ns", (json_int_t)k0.wall_ns, "boot1_ns",
                                  (json_int_t)k1.boot_ns, "mono1_ns", (json_int_t)k1.mono_ns, "wall1_ns",
                                  (json_int_t)k1.wall_ns));
    json_object_set_new(s.j, "status_before", bench_status_counters(before));
    json_object_set_new(s.j, "status_after", bench_status_counters(after));
    int64_t rss = after ? bench_jint(after, "memory.resident_bytes") : -1;
    json_object_set_new(s.j, "server_resident_bytes", rss >= 0 ? json_integer(rss) : json_null());
    json_object_set_new(s.j, "host_memory_pressure", json_pack("{s:o,s:o}", "before", psi0, "after", read_psi()));
    json_decref(before);
    json_decref(after);
    json_t *metrics = json_object();
    for (int m = 0; m < BM_COUNT; m++) {
        if (!s.has[m])
            continue;
        json_object_set_new(metrics, bench_metrics[m].key, json_real(s.metric[m]));
        r->has_metric[m] = true;
        r->values[((size_t)m * (size_t)c->rounds + (size_t)round) * 4 + (size_t)pos] = s.metric[m];
    }
    json_object_set_new(s.j, "metrics", metrics);
    bench_slot_reasons_close(&s);
    json_object_set_new(s.j, "requests", s.requests);
    json_array_append_new(r->slots, s.j);
    bench_http_free(&s.h);
    if (c->is_sequential)
        bench_arm_stop(r, a);
    return 0;
}

/* Seeded and strict-JSON probes: each arm reproduces itself, and the arms
 * agree unless a change of output is expected. key: the slots' hash list;
 * what: the workload, for reasons. */
static json_t *check_hashes(run_t *r, const char *key, const char *what)
{
    const json_t *first[2] = {NULL, NULL}, *first_slot[2] = {NULL, NULL};
    bool is_same_between = true, has_both = true;
    size_t i;
    json_t *sl;
    json_array_foreach(r->slots, i, sl)
    {
        int ai = !strcmp(json_string_value(json_object_get(sl, "arm")), "B");
        const json_t *h = json_object_get(sl, key);
        if (!h)
            continue;
        if (!first[ai]) {
            first[ai] = h;
            first_slot[ai] = sl;
        } else if (!json_equal(first[ai], h)) {
            bench_run_invalid(r, json_pack("[o,o]", bench_slot_ref(first_slot[ai], -1), bench_slot_ref(sl, -1)),
                              "%s outputs of arm %c differ between its own slots (non-deterministic)", what,
                              ai ? 'B' : 'A');
        }
    }
    if (!first[0] || !first[1])
        has_both = false;
    else
        is_same_between = json_equal(first[0], first[1]);
    if (has_both && !is_same_between && !r->c->expect_output_change)
        bench_run_invalid(r, json_pack("[o,o]", bench_slot_ref(first_slot[0], -1), bench_slot_ref(first_slot[1], -1)),
                          "%s outputs differ between A and B (pass --expect-output-change if the candidate is meant "
                          "to change outputs)",
                          what);
    return json_pack("{s:b,s:b,s:b}", "compared", has_both, "identical", has_both && is_same_between,
                     "expect_output_change", r->c->expect_output_change);
}

/* The strict-JSON counts of every slot summed per arm, mask times per
 * token from the summed deltas, and the output comparison. */
static json_t *strict_json_summary(run_t *r)
{
    static const char *const counts[] = {"requests", "valid", "invalid", "cut_offs", "completion_tokens"};
    static const char *const gcounts[] = {"masks", "mask_ns_total", "mask_wait_ns_total", "forced_tokens",
                                          "drafts_cut"};
    int64_t sum[2][5] = {{0}}, gsum[2][5] = {{0}};
    int n_slots[2] = {0, 0};
    size_t i;
    json_t *sl;
    json_array_foreach(r->slots, i, sl)
    {
        const json_t *sj = json_object_get(sl, "strict_json");
        if (!sj)
            continue;
        int ai = !strcmp(json_string_value(json_object_get(sl, "arm")), "B");
        n_slots[ai]++;
        for (int k = 0; k < 5; k++) {
            sum[ai][k] += bench_jint(sj, counts[k]);
            gsum[ai][k] += bench_gcount(json_object_get(sj, "grammar"), gcounts[k]);
        }
    }
    json_t *arms = json_object();
    for (int ai = 0; ai < 2; ai++) {
        json_t *o = json_object();
        json_object_set_new(o, "slots", json_integer(n_slots[ai]));
        for (int k = 0; k < 5; k++)
            json_object_set_new(o, counts[k], json_integer((json_int_t)sum[ai][k]));
        for (int k = 0; k < 5; k++)
            json_object_set_new(o, gcounts[k], json_integer((json_int_t)gsum[ai][k]));
        double masks = (double)gsum[ai][0];
        json_object_set_new(o, "mask_ns_per_token", json_real(masks > 0 ? (double)gsum[ai][1] / masks : 0));
        json_object_set_new(o, "mask_wait_ns_per_token", json_real(masks > 0 ? (double)gsum[ai][2] / masks : 0));
        json_object_set_new(arms, ai ? "B" : "A", o);
    }
    json_t *out = check_hashes(r, "strict_json_hashes", "strict-json");
    json_object_set_new(out, "arms", arms);
    return out;
}

static json_t *abba_json(const bench_abba_t *x)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:s,s:s}", "a", x->a, "b", x->b, "noise", x->noise, "round_noise",
                     x->round_noise, "change", x->change, "threshold", x->threshold, "rounds", x->n_rounds, "verdict",
                     bench_verdict_name(x->verdict), "why", x->why);
}

/* The combination rule, stated in every report beside the per-round figures. */
static const char bench_combine_rule[] =
    "per round (SPEC): a = mean(A1, A4), b = mean(B2, B3), noise = max(|A1 - A4| / a, |B2 - B3| / b), "
    "change = b / a - 1 (positive = candidate better); combined over n rounds: change = median of the round "
    "changes; the 5 % gate applies to round_noise = the median of the rounds' own noise (above 5 %: "
    "inconclusive); noise = 1.2533 x max(round_noise, 1.486 x 1.4826 x MAD of the round changes / (1 + change)) / "
    "sqrt(n) (n = 2: mean and SD of the two changes), also inconclusive above 5 %; gain when change > max(2 %, 2 x "
    "noise), regression when change < -max(2 %, 2 x noise), else no change. More rounds make a verdict firmer "
    "only through that threshold; one round is decided by its own figures.";

static json_t *statistics(run_t *r, bench_verdict_t *overall)
{
    const bench_config_t *c = r->c;
    json_t *st = json_object();
    bench_verdict_t dec[BM_COUNT];
    size_t n_dec = 0;
    bench_abba_t *rounds = calloc((size_t)c->rounds, sizeof *rounds);
    for (int m = 0; m < BM_COUNT; m++) {
        if (!r->has_metric[m])
            continue;
        bool hib = bench_metrics[m].is_higher_better;
        json_t *jr = json_array();
        for (int k = 0; k < c->rounds; k++) {
            const double *v = &r->values[((size_t)m * (size_t)c->rounds + (size_t)k) * 4];
            rounds[k] = bench_abba(v, hib);
            json_t *o = abba_json(&rounds[k]);
            json_object_set_new(o, "values", json_pack("[f,f,f,f]", v[0], v[1], v[2], v[3]));
            json_array_append_new(jr, o);
        }
        bench_abba_t comb = bench_abba_combine(rounds, (size_t)c->rounds, hib);
        bool is_decider = (c->decide_mask >> m) & 1;
        if (is_decider)
            dec[n_dec++] = comb.verdict;
        json_object_set_new(st, bench_metrics[m].key,
                            json_pack("{s:s,s:s,s:b,s:b,s:o,s:o}", "label", bench_metrics[m].label, "unit",
                                      bench_metrics[m].unit, "higher_is_better", hib, "decides", is_decider, "rounds",
                                      jr, "combined", abba_json(&comb)));
    }
    free(rounds);
    *overall = bench_overall(dec, n_dec);
    return st;
}

/* Paired residency: both servers up, then warmed in the reverse of their
 * first slots' order (B, then A), so that A1 follows A's own warm-up as B3
 * follows B2: each arm then has one slot after itself and one after the
 * other arm in every round, including the first. */
static int pair_start(run_t *r, err_t *err)
{
    for (int i = 0; i < 2; i++)
        if (!r->arm[i].is_running && bench_arm_start(r, &r->arm[i], err))
            return -1;
    for (int i = 1; i >= 0; i--)
        if (bench_arm_warm(r, &r->arm[i], err))
            return -1;
    return 0;
}

static int run_all(run_t *r, err_t *err)
{
    const bench_config_t *c = r->c;
    for (int k = 0; k < c->rounds; k++) {
        if (!c->is_sequential && (k == 0 || c->is_restart_per_round) && pair_start(r, err))
            return -1;
        for (int pos = 0; pos < 4; pos++) {
            if (run_slot(r, k, pos, err))
                return -1;
            if (!c->is_quiet)
                fprintf(stderr, "splash bench: round %d slot %c%d done\n", k + 1, pos == 0 || pos == 3 ? 'A' : 'B',
                        pos + 1);
        }
        if (c->is_restart_per_round)
            for (int i = 0; i < 2; i++)
                bench_arm_stop(r, &r->arm[i]);
    }
    return 0;
}

/* The report's arms: what each was, how it was started, what it answered. */
static json_t *arms_json(run_t *r)
{
    json_t *arms = json_array();
    for (int i = 0; i < 2; i++) {
        arm_rt_t *a = &r->arm[i];
        json_array_append_new(arms, json_pack("{s:s,s:s,s:s?,s:s?,s:s,s:b,s:i,s:o,s:o,s:o}", "arm", i ? "B" : "A",
                                              "role", i ? "candidate" : "baseline", "command", a->cfg->cmd, "url",
                                              a->cfg->url, "verify_rows_declared", a->cfg->verify_rows, "has_status",
                                              a->has_status, "starts", a->starts, "fingerprint",
                                              a->fingerprint ? a->fingerprint : json_null(), "lifecycle", a->lifecycle,
                                              "traces", a->traces));
    }
    return arms;
}

/* The report's config: residency, rounds and every workload's settings. */
static json_t *config_json(const bench_config_t *c)
{
    json_t *cfg = json_pack(
        "{s:s,s:s,s:i,s:i,s:i,s:[s?,s?,s?],s:i,s:f,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:b}", "residency",
        c->is_sequential ? "sequential" : "paired", "restart",
        c->is_sequential          ? "slot"
        : c->is_restart_per_round ? "round"
                                  : "never",
        "rounds", c->rounds, "warmup", c->warmup, "warmup_tokens", c->warmup_tokens, "workloads",
        c->do_serial ? "serial" : NULL, c->do_mixed ? "mixed" : NULL, c->do_seeded ? "seeded" : NULL, "serial_repeat",
        c->serial_repeat, "serial_temperature", c->serial_temperature, "max_tokens", c->max_tokens,
        "mixed_decode_prompt", c->mixed_decode_prompt, "mixed_decode_tokens", c->mixed_decode_tokens,
        "mixed_long_prompt", c->mixed_long_prompt, "mixed_long_tokens", c->mixed_long_tokens, "mixed_short_prompt",
        c->mixed_short_prompt, "mixed_shorts", c->mixed_shorts, "mixed_repeat", c->mixed_repeat, "seeded_probes",
        c->seeded_probes, "seeded_tokens", c->seeded_tokens, "poll_ms", c->poll_ms, "seeded_prompt", c->seeded_prompt,
        "expect_output_change", c->expect_output_change);
    json_t *lens = json_array();
    for (int i = 0; i < c->n_serial_lens; i++)
        json_array_append_new(lens, json_integer(c->serial_lens[i]));
    json_object_set_new(cfg, "serial_prompt_tokens", lens);
    if (c->do_strict_json) {
        json_array_append_new(json_object_get(cfg, "workloads"), json_string("strict-json"));
        json_t *names = json_array();
        for (int k = 0; k < c->strict_json_probes && k < BENCH_JSON_SCHEMAS; k++)
            json_array_append_new(names, json_string(bench_json_schema_name(k)));
        json_object_set_new(cfg, "strict_json",
                            json_pack("{s:i,s:i,s:i,s:o}", "probes", c->strict_json_probes, "cycles",
                                      c->strict_json_cycles, "max_tokens", c->strict_json_tokens, "schemas", names));
    }
    if (c->do_cached) {
        json_array_append_new(json_object_get(cfg, "workloads"), json_string("cached"));
        json_object_set_new(cfg, "cached",
                            json_pack("{s:i,s:i,s:i,s:i}", "pairs", c->cached_pairs, "prefix_tokens",
                                      c->cached_prefix_tokens, "suffix_tokens", c->cached_suffix_tokens, "max_tokens",
                                      c->cached_max_tokens));
    }
    if (c->do_sessions) {
        json_array_append_new(json_object_get(cfg, "workloads"), json_string("sessions"));
        json_object_set_new(cfg, "sessions",
                            json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:s?,s:i,s:i}", "sessions", c->sessions, "turns",
                                      c->sessions_turns, "first_tokens", c->sessions_first_tokens, "turn_tokens",
                                      c->sessions_turn_tokens, "turn_tokens_max", c->sessions_turn_tokens_max,
                                      "max_tokens", c->sessions_max_tokens, "session_key",
                                      c->is_session_id_stable ? "id" : "salt", "session_name",
                                      c->is_session_id_stable ? c->sessions_name : NULL, "stagger_ms",
                                      c->sessions_stagger_ms, "think_ms", c->sessions_think_ms));
    }
    json_object_set_new(cfg, "cpus",
                        json_pack("{s:s?,s:s?}", "server", c->server_cpus_text, "client", c->client_cpus_text));
    return cfg;
}

/* The validity, the verdict (capped when checks were unverifiable, diagnostic
 * when traced) and the exit code into the report; returns the exit code. */
static int set_verdict(run_t *r, json_t *report, int rc, bench_verdict_t v)
{
    bool is_valid;
    json_t *validity = bench_validity(r, &is_valid);
    bool is_gain_withheld = is_valid && v == BENCH_GAIN && json_array_size(r->unverifiable) > 0;
    v = bench_cap_unverified(v, json_array_size(r->unverifiable) > 0);
    if (!is_valid)
        v = BENCH_INVALID;
    /* a traced run measured the engine while it recorded: diagnostic only */
    bool is_diagnostic = r->c->is_traced && !rc && v != BENCH_INVALID;
    int exit_code = rc ? 1 : is_diagnostic ? BENCH_EXIT_DIAGNOSTIC : bench_verdict_exit(v);
    json_object_set_new(report, "validity", validity);
    char verdict[1024];
    int n = is_diagnostic ? snprintf(verdict, sizeof verdict,
                                     "diagnostic (traced arms: no speed verdict; the metrics alone said %s)",
                                     bench_verdict_name(v))
                          : snprintf(verdict, sizeof verdict, "%s", rc ? "error" : bench_verdict_name(v));
    if (json_array_size(r->unverifiable)) {
        n += snprintf(verdict + n, sizeof verdict - (size_t)n, " (unverifiable: ");
        for (size_t i = 0; i < json_array_size(r->unverifiable) && n < (int)sizeof verdict; i++)
            n += snprintf(verdict + n, sizeof verdict - (size_t)n, "%s%s", i ? "; " : "",
                          json_string_value(json_array_get(r->unverifiable, i)));
        snprintf(verdict + n, sizeof verdict - (size_t)n, ")");
    }
    if (is_gain_withheld)
        snprintf(verdict + strlen(verdict), sizeof verdict - strlen(verdict),
                 " [the metrics showed a gain; a run with unverifiable checks is never called a gain]");
    json_object_set_new(report, "verdict", json_string(verdict));
    json_object_set_new(report, "gain_withheld", json_boolean(is_gain_withheld));
    json_object_set_new(report, "diagnostic", json_boolean(is_diagnostic));
    json_object_set_new(report, "exit_code", json_integer(exit_code));
    return exit_code;
}

/* Every decode chunk gap per arm (ms), for the distribution; frees them. */
static json_t *gaps_json(run_t *r)
{
    json_t *dist = json_object();
    for (int k = 0; k < 2; k++) {
        json_t *g = json_array();
        for (size_t j = 0; j < r->n_gaps[k]; j++)
            json_array_append_new(g, json_real(r->gaps[k][j]));
        json_object_set_new(dist, k ? "B" : "A", g);
        free(r->gaps[k]);
    }
    return dist;
}

int bench_run(const bench_config_t *c, err_t *err)
{
    if (c->is_traced && (c->arm[0].url || c->arm[1].url))
        return err_set(err, "--trace needs both arms as server commands bench starts: a URL arm's server cannot "
                            "be made to trace, nor its capture checked");
    if (sched_setaffinity(0, sizeof c->client_cpus, &c->client_cpus))
        return err_set(err, "cannot run bench on the CPUs asked for: %s", strerror(errno));
    run_t r = {.c = c};
    snprintf(r.run_id, sizeof r.run_id, "%lx-%d", (unsigned long)time(NULL), (int)getpid());
    r.slots = json_array();
    r.reasons = json_array();
    r.reason_refs = json_array();
    r.unverifiable = json_array();
    r.values = calloc((size_t)BM_COUNT * (size_t)c->rounds * 4, sizeof *r.values);
    for (int i = 0; i < 2; i++) {
        r.arm[i] = (arm_rt_t){
            .idx = i, .label = i ? 'B' : 'A', .cfg = &c->arm[i], .lifecycle = json_array(), .traces = json_array()};
    }
    bench_install_signal_cleanup();
    bench_inhibit_t inh;
    if (c->is_inhibit)
        bench_inhibit_begin(&inh);
    else
        inh = (bench_inhibit_t){.fd = -1, .why = "disabled (--no-inhibit)"};
    json_t *report = json_object();
    json_object_set_new(report, "schema", json_string("splash-bench/1"));
    json_object_set_new(report, "command_line", json_string(c->command_line ? c->command_line : ""));
    json_object_set_new(report, "run_id", json_string(r.run_id));
    json_object_set_new(report, "started_unix_ms", json_integer((json_int_t)time(NULL) * 1000));
    json_object_set_new(report, "environment", environment());
    int64_t t0 = clock_now_ns();
    int rc = run_all(&r, err);
    for (int i = 0; i < 2; i++)
        bench_arm_stop(&r, &r.arm[i]);
    bench_inhibit_end(&inh);
    json_t *env = json_object_get(report, "environment");
    json_object_set_new(env, "loadavg_end", read_first_line("/proc/loadavg"));
    json_object_set_new(env, "memory_pressure_end", read_psi());
    json_object_set_new(report, "sleep_inhibit",
                        json_pack("{s:s,s:b,s:s}", "method", "systemd-inhibit", "held", inh.is_held, "why", inh.why));
    json_object_set_new(report, "elapsed_s", json_real((double)(clock_now_ns() - t0) / 1e9));
    json_object_set_new(report, "arms", arms_json(&r));
    for (int i = 0; i < 2; i++)
        free(r.arm[i].ctx);
    json_object_set_new(report, "config", config_json(c));
    json_object_set_new(report, "slots", r.slots);
    if (rc) {
        bench_run_invalid(&r, NULL, "%s", err->msg);
        json_object_set_new(report, "error", json_string(err->msg));
    }
    json_object_set_new(report, "seeded", check_hashes(&r, "seeded_hashes", "seeded"));
    if (c->do_strict_json)
        json_object_set_new(report, "strict_json", strict_json_summary(&r));
    bench_verdict_t v = BENCH_NO_CHANGE;
    json_object_set_new(report, "statistics", rc ? json_object() : statistics(&r, &v));
    json_object_set_new(report, "statistics_rule", json_string(bench_combine_rule));
    int exit_code = set_verdict(&r, report, rc, v);
    json_object_set_new(report, "chunk_gaps_ms", gaps_json(&r));
    free(r.values);
    err_t werr;
    if (c->json_out && bench_write_json(report, c->json_out, &werr))
        fprintf(stderr, "splash bench: %s\n", werr.msg);
    if (c->html_out && bench_write_html(report, c->html_out, &werr))
        fprintf(stderr, "splash bench: %s\n", werr.msg);
    bench_print_summary(report, stdout);
    if (c->json_out)
        printf("report: %s\n", c->json_out);
    if (c->html_out)
        printf("html:   %s\n", c->html_out);
    json_decref(report);
    return exit_code;
}