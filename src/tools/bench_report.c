/* splash bench's readable summary on stdout, written from the report JSON
 * that bench_run builds (the HTML page is bench_html.c's). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "tools/bench.h"

static double num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static long long jint(const json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

/* The sessions workload per slot: the cached share of prompt tokens, the
 * follow-up turns' TTFT, throughput, and the share per replica (by the
 * x-splash-replica header each answer carried). */
static void print_sessions(const json_t *rep, FILE *f)
{
    const json_t *cfg = json_object_get(json_object_get(rep, "config"), "sessions");
    if (!cfg)
        return;
    fprintf(f, "\n  sessions: %lld conversations at once, %lld turns each (%lld tokens, +%lld", jint(cfg, "sessions"),
            jint(cfg, "turns"), jint(cfg, "first_tokens"), jint(cfg, "turn_tokens"));
    if (jint(cfg, "turn_tokens_max") > jint(cfg, "turn_tokens"))
        fprintf(f, "-%lld", jint(cfg, "turn_tokens_max"));
    fprintf(f, " a turn)");
    if (jint(cfg, "stagger_ms") > 0 || jint(cfg, "think_ms") > 0)
        fprintf(f, "; started %lld ms apart, 0.5-1.5 x %lld ms between an answer and the next turn",
                jint(cfg, "stagger_ms"), jint(cfg, "think_ms"));
    fputc('\n', f);
    fprintf(f, "  %-5s %8s %14s %10s  %s\n", "slot", "cached", "turn TTFT p50", "tok/s",
            "per replica: cached (requests)");
    size_t i;
    const json_t *sl;
    json_array_foreach(json_object_get(rep, "slots"), i, sl)
    {
        const json_t *ss = json_object_get(sl, "sessions");
        if (!ss)
            continue;
        fprintf(f, "  %-5s %7.1f%% %11.1f ms %10.1f ", str(sl, "slot"),
                100.0 * json_number_value(json_object_get(ss, "cached_fraction")),
                json_number_value(json_object_get(ss, "followup_ttft_p50_ms")),
                json_number_value(json_object_get(ss, "throughput")));
        const char *name;
        const json_t *rp;
        json_object_foreach((json_t *)json_object_get(ss, "replicas"), name, rp)
        {
            const json_t *fr = json_object_get(rp, "cached_fraction");
            fprintf(f, " %s %.1f%% (%lld)", name, json_is_number(fr) ? 100.0 * json_number_value(fr) : 0.0,
                    jint(rp, "requests"));
        }
        fputc('\n', f);
    }
}

/* The cached scenario per slot: reuse expected and seen on each kind of
 * request (summed over the slot's pairs) and how the continuations were
 * served. */
static void print_cached(const json_t *rep, FILE *f)
{
    const json_t *cfg = json_object_get(json_object_get(rep, "config"), "cached");
    if (!cfg)
        return;
    fprintf(f, "\n  cached: %lld pair(s) a slot under one fresh salt each; prefix %lld tokens, +%lld new\n",
            jint(cfg, "pairs"), jint(cfg, "prefix_tokens"), jint(cfg, "suffix_tokens"));
    fprintf(f, "  %-5s %6s %12s %16s %16s %7s %7s %6s\n", "slot", "block", "cold cached", "partial cached",
            "full cached", "served", "full", "leaks");
    size_t i;
    const json_t *sl;
    json_array_foreach(json_object_get(rep, "slots"), i, sl)
    {
        const json_t *c = json_object_get(sl, "cached");
        if (!c)
            continue;
        long long got[3] = {0, 0, 0};
        size_t k;
        const json_t *ob;
        json_array_foreach(json_object_get(c, "observed"), k, ob)
        {
            got[0] += jint(ob, "cold");
            got[1] += jint(ob, "partial");
            got[2] += jint(ob, "full");
        }
        long long n = jint(c, "pairs");
        char want[2][24], blk[16];
        for (int w = 0; w < 2; w++) {
            const json_t *e = json_object_get(c, w ? "expected_full" : "expected_partial");
            if (json_is_integer(e))
                snprintf(want[w], sizeof want[w], "%lld", n * (long long)json_integer_value(e));
            else
                snprintf(want[w], sizeof want[w], ">0");
        }
        if (json_is_integer(json_object_get(c, "block_size")))
            snprintf(blk, sizeof blk, "%lld", jint(c, "block_size"));
        else
            snprintf(blk, sizeof blk, "?");
        char cells[3][40];
        snprintf(cells[0], sizeof cells[0], "%lld/0", got[0]);
        snprintf(cells[1], sizeof cells[1], "%lld/%s", got[1], want[0]);
        snprintf(cells[2], sizeof cells[2], "%lld/%s", got[2], want[1]);
        fprintf(f, "  %-5s %6s %12s %16s %16s %7lld %7lld %6lld\n", str(sl, "slot"), blk, cells[0], cells[1], cells[2],
                jint(c, "fully_cached") + jint(c, "partially_cached"), jint(c, "fully_cached"), jint(c, "salt_leaks"));
    }
    fprintf(f, "  (cached tokens seen/expected, summed over the pairs; served: continuations answered, full: of\n"
               "  them served fully cached, at most the first token's row computed)\n");
}

/* One arm: its command or URL, the fingerprint of its server, binary and
 * model, and the capture check of each trace it wrote. */
static void print_arm(const json_t *a, FILE *f)
{
    const json_t *fp = json_object_get(a, "fingerprint");
    fprintf(f, "  %s (%s): %s\n", str(a, "arm"), str(a, "role"),
            json_is_string(json_object_get(a, "command")) ? str(a, "command") : str(a, "url"));
    fprintf(f, "     %s server, binary %.16s  model %.16s  verify_rows %s\n",
            json_is_string(json_object_get(fp, "server_kind")) ? str(fp, "server_kind") : "unknown",
            json_is_string(json_object_get(fp, "binary_sha256")) ? str(fp, "binary_sha256") : "?",
            json_is_string(json_object_get(fp, "model_sha256")) ? str(fp, "model_sha256") : "?",
            str(a, "verify_rows_declared"));
    const json_t *tr = json_object_get(a, "traces");
    for (size_t k = 0; k < json_array_size(tr); k++) {
        const json_t *t = json_array_get(tr, k);
        fprintf(f, "     trace of start %lld: %s, %lld events, %lld dropped: %s\n",
                (long long)json_integer_value(json_object_get(t, "start")),
                json_is_true(json_object_get(t, "valid")) ? "valid" : "INVALID",
                (long long)json_integer_value(json_object_get(t, "recorded")),
                (long long)json_integer_value(json_object_get(t, "dropped")), str(t, "file"));
    }
}

/* The opening lines: residency, how servers were restarted, the rounds,
 * then each arm. */
static void print_setup(const json_t *rep, FILE *f)
{
    const json_t *arms = json_object_get(rep, "arms");
    const char *restart = str(json_object_get(rep, "config"), "restart");
    fprintf(f, "splash bench: %s residency (%s), %lld round(s) of A B B A\n",
            str(json_object_get(rep, "config"), "residency"),
            !strcmp(restart, "round")  ? "fresh servers every round"
            : !strcmp(restart, "slot") ? "a server started for every slot"
                                       : "the same servers throughout",
            (long long)json_integer_value(json_object_get(json_object_get(rep, "config"), "rounds")));
    for (size_t i = 0; i < json_array_size(arms); i++)
        print_arm(json_array_get(arms, i), f);
}

/* The metrics table: each metric combined over the rounds, then its rounds
 * one by one where there were several. */
static void print_statistics(const json_t *rep, FILE *f)
{
    const json_t *st = json_object_get(rep, "statistics");
    if (!json_object_size(st))
        return;
    bool has_rounds = false;
    fprintf(f, "\n  %-34s %11s %11s %8s %7s %7s %7s  %s\n", "metric", "A", "B", "change", "rnoise", "noise", "needs",
            "verdict");
    const char *key;
    const json_t *m;
    json_object_foreach((json_t *)st, key, m)
    {
        const json_t *c = json_object_get(m, "combined");
        char label[64];
        snprintf(label, sizeof label, "%s (%s)%s", str(m, "label"), str(m, "unit"),
                 json_is_true(json_object_get(m, "decides")) ? "" : " *");
        fprintf(f, "  %-34s %11.3f %11.3f %+7.2f%% %6.2f%% %6.2f%% %6.2f%%  %s\n", label, num(c, "a"), num(c, "b"),
                100 * num(c, "change"), 100 * num(c, "round_noise"), 100 * num(c, "noise"), 100 * num(c, "threshold"),
                str(c, "verdict"));
        const json_t *rounds = json_object_get(m, "rounds");
        has_rounds |= json_array_size(rounds) > 1;
        if (json_array_size(rounds) > 1)
            for (size_t k = 0; k < json_array_size(rounds); k++) {
                const json_t *r = json_array_get(rounds, k);
                fprintf(f, "      round %-3zu %11.3f %11.3f %+7.2f%% %6.2f%% %6.2f%% %6.2f%%  %s\n", k + 1, num(r, "a"),
                        num(r, "b"), 100 * num(r, "change"), 100 * num(r, "round_noise"), 100 * num(r, "noise"),
                        100 * num(r, "threshold"), str(r, "verdict"));
            }
    }
    fprintf(f, "  (* informational: does not decide the verdict; change > 0 means B is better)\n");
    fprintf(f,
            "  (rnoise: SPEC's per-round noise, median over rounds, inconclusive above 5 %%; noise: the\n"
            "   combined noise that sets needs = max(2 %%, 2 x noise)%s)\n",
            has_rounds ? "; rounds combine as the median round change, the rule in full is the report's "
                         "statistics_rule"
                       : "");
}

/* The strict-json probes per arm: the outputs' verdicts, the grammar's
 * cost from /status, and whether the arms' outputs matched. */
static void print_strict_json(const json_t *rep, FILE *f)
{
    const json_t *sj = json_object_get(rep, "strict_json");
    if (!sj)
        return;
    const json_t *cfg = json_object_get(json_object_get(rep, "config"), "strict_json");
    fprintf(f, "\n  strict-json: %lld probe(s) x %lld turn(s), at most %lld tokens a turn; schemas",
            (long long)json_integer_value(json_object_get(cfg, "probes")),
            (long long)json_integer_value(json_object_get(cfg, "cycles")),
            (long long)json_integer_value(json_object_get(cfg, "max_tokens")));
    const json_t *names = json_object_get(cfg, "schemas");
    for (size_t i = 0; i < json_array_size(names); i++)
        fprintf(f, "%s %s", i ? "," : "", json_string_value(json_array_get(names, i)));
    fprintf(f, "\n  %-4s %9s %7s %8s %8s %12s %13s %14s %7s\n", "arm", "requests", "valid", "invalid", "cut-off",
            "mask ns/tok", "wait ns/tok", "forced tokens", "masks");
    for (int k = 0; k < 2; k++) {
        const json_t *a = json_object_get(json_object_get(sj, "arms"), k ? "B" : "A");
        fprintf(f, "  %-4s %9lld %7lld %8lld %8lld %12.1f %13.1f %14lld %7lld\n", k ? "B" : "A",
                (long long)json_integer_value(json_object_get(a, "requests")),
                (long long)json_integer_value(json_object_get(a, "valid")),
                (long long)json_integer_value(json_object_get(a, "invalid")),
                (long long)json_integer_value(json_object_get(a, "cut_offs")), num(a, "mask_ns_per_token"),
                num(a, "mask_wait_ns_per_token"), (long long)json_integer_value(json_object_get(a, "forced_tokens")),
                (long long)json_integer_value(json_object_get(a, "masks")));
    }
    fprintf(f, "  outputs between A and B: %s\n",
            !json_is_true(json_object_get(sj, "compared"))              ? "not compared"
            : json_is_true(json_object_get(sj, "identical"))            ? "identical"
            : json_is_true(json_object_get(sj, "expect_output_change")) ? "differ (expected: --expect-output-change)"
                                                                        : "DIFFER");
}

/* Validity with its first reasons (the JSON report keeps them all), the
 * checks that could not be made, and whether sleep was held off. */
static void print_validity(const json_t *rep, FILE *f)
{
    const json_t *val = json_object_get(rep, "validity");
    const json_t *reasons = json_object_get(val, "reasons");
    fprintf(f, "\n  validity: %s\n", json_is_true(json_object_get(val, "valid")) ? "valid" : "INVALID");
    for (size_t i = 0; i < json_array_size(reasons) && i < 12; i++)
        fprintf(f, "    - %s\n", json_string_value(json_array_get(reasons, i)));
    if (json_array_size(reasons) > 12)
        fprintf(f, "    ... %zu more in the JSON report\n", json_array_size(reasons) - 12);
    const json_t *unv = json_object_get(val, "unverifiable");
    for (size_t i = 0; i < json_array_size(unv); i++)
        fprintf(f, "    unverifiable: %s\n", json_string_value(json_array_get(unv, i)));
    const json_t *inh = json_object_get(rep, "sleep_inhibit");
    fprintf(f, "  sleep inhibited: %s%s%s\n", json_is_true(json_object_get(inh, "held")) ? "yes" : "no",
            str(inh, "why")[0] ? " - " : "", str(inh, "why"));
}

void bench_print_summary(const json_t *rep, FILE *f)
{
    print_setup(rep, f);
    print_statistics(rep, f);
    print_strict_json(rep, f);
    print_cached(rep, f);
    print_sessions(rep, f);
    print_validity(rep, f);
    fprintf(f, "\nverdict: %s (exit %lld)\n", str(rep, "verdict"),
            (long long)json_integer_value(json_object_get(rep, "exit_code")));
}

int bench_write_json(const json_t *rep, const char *path, err_t *err)
{
    afile_t a;
    FILE *f = afile_open(&a, path, err);
    if (!f)
        return -1;
    if (json_dumpf(rep, f, JSON_INDENT(1)) != 0) {
        afile_abort(&a);
        return err_set(err, "writing %s failed", path);
    }
    return afile_commit(&a, err);
}
