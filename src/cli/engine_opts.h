/* The speculative-decoding, KV, recurrent-state and prefault options splash run and splash serve
 * share: one getopt_long table fragment and one parser, so both commands
 * read them alike. */
#ifndef SPLASH_CLI_ENGINE_OPTS_H
#define SPLASH_CLI_ENGINE_OPTS_H

#include <getopt.h>

#include "base/err.h"
#include "engine/engine.h"

/* getopt_long's values for ENGINE_OPTIONS (above any other option's). */
enum {
    EO_DRAFT = 0x200,
    EO_DRAFT_MAX,
    EO_VERIFY_ROWS,
    EO_KV_TYPE,
    EO_SPEC_ROLLBACK,
    EO_STATE_TYPE,
    EO_PREFAULT,
    EO_END
};

/* clang-format off */
#define ENGINE_OPTIONS                                              \
    {"draft", required_argument, NULL, EO_DRAFT},                   \
    {"draft-max", required_argument, NULL, EO_DRAFT_MAX},           \
    {"verify-rows", required_argument, NULL, EO_VERIFY_ROWS},       \
    {"kv-type", required_argument, NULL, EO_KV_TYPE},               \
    {"spec-rollback", required_argument, NULL, EO_SPEC_ROLLBACK},   \
    {"state-type", required_argument, NULL, EO_STATE_TYPE},       \
    {"prefault", required_argument, NULL, EO_PREFAULT}
/* clang-format on */

/* opt (EO_DRAFT..EO_END - 1) and its value into e; --draft FILE also sets
 * *draft_path. */
int engine_opt(int opt, const char *v, engine_config_t *e, const char **draft_path, err_t *err);
/* --state-type's value (f32 or f16) as a type id (TYPE_F32, TYPE_F16). */
int state_type_parse(const char *flag, const char *v, int *type, err_t *err);

#endif
