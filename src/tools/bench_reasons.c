/* splash bench validity reasons and what they name: every reason a slot
 * or the run is invalid is kept with the report targets it is about (the
 * requests, the slot or the arm), so the HTML page can link a reason to
 * the rows it names without parsing its words. */
#include <stdarg.h>
#include <stdio.h>

#include "tools/bench_internal.h"

static void slot_reason(slot_t *s, const int *reqs, int n_reqs, const char *fmt, va_list ap)
{
    if (json_array_size(s->reasons) >= BENCH_MAX_SLOT_REASONS) {
        s->n_reasons_dropped++;
        return;
    }
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    json_array_append_new(s->reasons, json_string(buf));
    json_t *idx = json_array();
    for (int i = 0; i < n_reqs; i++)
        if (reqs[i] >= 0)
            json_array_append_new(idx, json_integer(reqs[i]));
    json_array_append_new(s->reason_requests, idx);
}

void bench_slot_invalid(slot_t *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    slot_reason(s, NULL, 0, fmt, ap);
    va_end(ap);
}

void bench_slot_invalid_at(slot_t *s, const int *reqs, int n_reqs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    slot_reason(s, reqs, n_reqs, fmt, ap);
    va_end(ap);
}

void bench_slot_reasons_close(slot_t *s)
{
    if (s->n_reasons_dropped) {
        char buf[96];
        snprintf(buf, sizeof buf, "... and %d more", s->n_reasons_dropped);
        json_array_append_new(s->reasons, json_string(buf));
        json_array_append_new(s->reason_requests, json_array());
    }
    json_object_set_new(s->j, "valid", json_boolean(json_array_size(s->reasons) == 0));
    json_object_set_new(s->j, "reasons", s->reasons);
    json_object_set_new(s->j, "reason_requests", s->reason_requests);
}

void bench_run_invalid(run_t *r, json_t *targets, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(r->reasons, json_string(buf));
    json_array_append_new(r->reason_refs, targets ? targets : json_array());
}

json_t *bench_slot_ref(const json_t *slot, int request)
{
    json_t *t = json_pack("{s:O,s:O}", "round", json_object_get(slot, "round"), "slot", json_object_get(slot, "slot"));
    if (t && request >= 0)
        json_object_set_new(t, "request", json_integer(request));
    return t;
}

json_t *bench_arm_ref(char arm)
{
    char s[2] = {arm, 0};
    return json_pack("[{s:s}]", "arm", s);
}

/* Every reason of the run, then of each slot prefixed with the slot and
 * round, with the parallel list of the targets each names: a slot's reason
 * names its requests, or the slot itself when it names none. */
json_t *bench_validity(run_t *r, bool *is_valid)
{
    json_t *all = json_array(), *refs = json_array();
    *is_valid = json_array_size(r->reasons) == 0;
    for (size_t i = 0; i < json_array_size(r->reasons); i++) {
        json_array_append(all, json_array_get(r->reasons, i));
        json_t *t = json_array_get(r->reason_refs, i);
        json_array_append_new(refs, t ? json_incref(t) : json_array());
    }
    size_t i;
    json_t *x;
    json_array_foreach(r->slots, i, x)
    {
        size_t j;
        json_t *y;
        json_array_foreach(json_object_get(x, "reasons"), j, y)
        {
            char buf[640];
            snprintf(buf, sizeof buf, "%s (round %lld): %s", json_string_value(json_object_get(x, "slot")),
                     (long long)bench_jint(x, "round"), json_string_value(y));
            json_array_append_new(all, json_string(buf));
            const json_t *idx = json_array_get(json_object_get(x, "reason_requests"), j);
            json_t *t = json_array();
            for (size_t k = 0; k < json_array_size(idx); k++)
                json_array_append_new(t, bench_slot_ref(x, (int)json_integer_value(json_array_get(idx, k))));
            if (!json_array_size(t))
                json_array_append_new(t, bench_slot_ref(x, -1));
            json_array_append_new(refs, t);
            *is_valid = false;
        }
    }
    json_decref(r->reasons); /* its reasons are in `all` now */
    r->reasons = NULL;
    json_decref(r->reason_refs);
    r->reason_refs = NULL;
    /* the report owns r->unverifiable from here; r keeps reading it */
    return json_pack("{s:b,s:o,s:o,s:o}", "valid", *is_valid, "reasons", all, "unverifiable", r->unverifiable,
                     "reason_refs", refs);
}
