#include "cli/engine_opts.h"

#include <string.h>

#include "base/cli.h"
#include "engine/spec.h"
#include "kernels/types.h"
#include "model/kv.h"

int state_type_parse(const char *flag, const char *v, int *type, err_t *err)
{
    if (!strcmp(v, "f32"))
        *type = TYPE_F32;
    else if (!strcmp(v, "f16"))
        *type = TYPE_F16;
    else
        return err_set(err, "%s must be f32 or f16, not '%s'", flag, v);
    return 0;
}

int engine_opt(int opt, const char *v, engine_config_t *e, const char **draft_path, err_t *err)
{
    int64_t x;
    kv_type_t kt;
    switch (opt) {
    case EO_DRAFT:
        if (!strcmp(v, "ngram"))
            e->draft_mode = ENGINE_DRAFT_NGRAM;
        else if (!strcmp(v, "none"))
            e->draft_mode = ENGINE_DRAFT_NONE;
        else if (!strcmp(v, "mtp"))
            e->draft_mode = ENGINE_DRAFT_MTP; /* the model's own NextN block */
        else
            e->draft_mode = ENGINE_DRAFT_MODEL, *draft_path = v; /* a draft model file */
        return 0;
    case EO_DRAFT_MAX:
        if (cli_parse_i64("--draft-max", v, 1, SPEC_MAX_DRAFT, &x, err))
            return -1;
        e->draft_max = (int)x;
        return 0;
    case EO_VERIFY_ROWS:
        if (!strcmp(v, "all"))
            e->verify_rows = SPEC_VERIFY_ALL;
        else if (!strcmp(v, "auto"))
            e->verify_rows = SPEC_VERIFY_AUTO;
        else if (cli_parse_i64("--verify-rows", v, 0, SPEC_MAX_DRAFT, &x, err))
            return err_set(err, "--verify-rows: '%s' is not all, auto or a width in [0, %d]", v, SPEC_MAX_DRAFT);
        else
            e->verify_rows = (int)x;
        return 0;
    case EO_KV_TYPE:
        if (kv_type_parse("--kv-type", v, &kt, err))
            return -1;
        e->kv_type = (int)kt;
        return 0;
    case EO_STATE_TYPE: return state_type_parse("--state-type", v, &e->state_type, err);
    case EO_PREFAULT:
        if (strcmp(v, "idle") && strcmp(v, "off"))
            return err_set(err, "--prefault must be idle or off, not '%s'", v);
        e->prefault_off = !strcmp(v, "off");
        return 0;
    default: /* EO_SPEC_ROLLBACK */
        if (strcmp(v, "snapshot") && strcmp(v, "replay"))
            return err_set(err, "--spec-rollback must be snapshot or replay, not '%s'", v);
        e->spec_rollback = !strcmp(v, "replay") ? ENGINE_ROLLBACK_REPLAY : ENGINE_ROLLBACK_SNAPSHOT;
        return 0;
    }
}
