/* Inside the JSON Schema compiler (json_schema*.c): the compiler context,
 * the rule combinators and the functions its parts share.
 *
 *   json_schema.c         context, JSON pointers, keyword checks, $ref, the
 *                         schema dispatcher (compile) and the public API
 *   json_schema_syntax.c  RFC 8259 syntax rules, canonical serialisation
 *   json_schema_types.c   strings (format, pattern), integer ranges, arrays
 *   json_schema_object.c  objects (ordered properties, extra keys), allOf
 *
 * Every function returning a rule id returns -1 on an error and NEVER for a
 * schema no value satisfies (see json_schema.c's opening comment). */
#ifndef SPLASH_JSON_SCHEMA_IMPL_H
#define SPLASH_JSON_SCHEMA_IMPL_H

#include <string.h>

#include "grammar/json_schema.h"

#define NEVER (-2)

enum {
    T_NULL = 1,
    T_BOOL = 2,
    T_OBJ = 4,
    T_ARR = 8,
    T_NUM = 16,
    T_INT = 32,
    T_STR = 64,
    T_ALL = 127,
};

typedef struct ref_entry {
    const json_t *target;
    char *pointer;
    int rule;
    bool is_compiled;
} ref_entry_t;

typedef struct jc {
    gr_builder_t *b;
    gr_json_ws_t ws;
    const json_t *root;
    err_t *err;
    bool is_failed;
    char *ptr; /* current JSON pointer, NUL-terminated */
    size_t ptr_len, ptr_cap;
    int depth;
    ref_entry_t *refs;
    int n_refs, cap_refs;
    /* shared rules, -1 until made */
    int ws_rule, punct[128], json_char, string_any, number, integer, value, hex, digit;
} jc_t;

/* A growable list of rule ids (alternatives being collected). */
typedef struct rules {
    int *r;
    int n, cap;
} rules_t;

/* A growable NUL-terminated text (canonical serialisation, $ref pointers). */
typedef struct buf {
    char *s;
    size_t n, cap;
    bool is_oom;
} buf_t;

/* ------------------------------------------------ json_schema.c */

int jc_error(jc_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3))); /* fails "<msg> at <pointer>", -1 */
size_t jc_ptr_push(jc_t *c, const char *seg);     /* appends "/seg"; returns the length to pop back to */
size_t jc_ptr_push_index(jc_t *c, size_t i);      /* appends "/i"; returns the length to pop back to */
void jc_ptr_pop(jc_t *c, size_t old);             /* back to a length jc_ptr_push returned */
char *jc_ptr_copy(const jc_t *c);                 /* the current pointer, malloc'd */
char *jc_ptr_swap(jc_t *c, const char *p);        /* sets the pointer; returns the old one for jc_ptr_restore */
void jc_ptr_restore(jc_t *c, char *old);          /* back to (and frees) what jc_ptr_swap returned */
void jc_rules_add(jc_t *c, rules_t *l, int rule); /* appends an alternative (fails the compile on OOM) */
int jc_rules_choice(jc_t *c, rules_t *l);         /* choice of the list (NEVER when empty); frees it */
const char *jc_other_keyword(const json_t *s, const char *const *allowed, size_t n); /* first not inert/allowed */
long long jc_count_value(const json_t *v);       /* a checked count keyword's value (capped at 1e15) */
int jc_check_keywords(jc_t *c, const json_t *s); /* every keyword's name and value shape; -1 on error */
int jc_type_mask(jc_t *c, const json_t *s);      /* T_* mask of `type` and `nullable`; -1 on error */
int jc_compile_child(jc_t *c, const json_t *s, const char *seg, size_t index); /* compile at pointer + /seg or /index */
int jc_compile_at(jc_t *c, const json_t *s, const char *pointer);              /* compile at another pointer */
const json_t *jc_resolve_ref(jc_t *c, const char *ref, char **pointer);        /* a "#/..." target; NULL on error */

/* ----------------------------------------- json_schema_syntax.c */

int jc_ws_rule(jc_t *c);                                /* whitespace of the policy (empty unless FLEX) */
int jc_punct(jc_t *c, char ch);                         /* a structural character with the policy's whitespace */
int jc_empty_container(jc_t *c, char open, char close); /* "{}" / "[]" */
int jc_hex_rule(jc_t *c);                               /* one hex digit, any case */
int jc_digit_rule(jc_t *c);                             /* [0-9] */
int jc_json_char(jc_t *c);                              /* one string character, any encoding */
int jc_string_any(jc_t *c);                             /* any JSON string */
int jc_integer_any(jc_t *c);                            /* any JSON integer */
int jc_number_any(jc_t *c);                             /* any JSON number */
int jc_array_any(jc_t *c);                              /* any JSON array */
int jc_object_any(jc_t *c);                             /* any JSON object */
int jc_value_any(jc_t *c);                              /* any JSON value (one declared rule) */
void jc_buf_add(buf_t *b, const char *s, size_t n);     /* appends, NUL-terminated; sets is_oom on failure */
int jc_key_literal(jc_t *c, const char *name);          /* a property name, canonically serialised */
int jc_const_rule(jc_t *c, const json_t *v, int depth); /* exactly v, in the policy's serialisation */

/* ------------------------------------------ json_schema_types.c */

int jc_compile_string(jc_t *c, const json_t *s);  /* type string: format, pattern or length bounds */
int jc_compile_integer(jc_t *c, const json_t *s); /* type integer: minimum / maximum as digit grammars */
int jc_compile_array(jc_t *c, const json_t *s);   /* type array: prefixItems, items, item counts */

/* ----------------------------------------- json_schema_object.c */

int jc_compile_object(jc_t *c, const json_t *s); /* type object: properties, required, extra keys */
int jc_compile_allof(jc_t *c, const json_t *s);  /* allOf of object schemas, merged into one */

/* ------------------------------------------------ rule combinators */

static inline int lit(jc_t *c, const char *s)
{
    return gr_literal(c->b, s, strlen(s));
}

static inline int seq2(jc_t *c, int a, int b)
{
    int r[2] = {a, b};
    return gr_seq(c->b, r, 2);
}

static inline int seq3(jc_t *c, int a, int b, int d)
{
    int r[3] = {a, b, d};
    return gr_seq(c->b, r, 3);
}

static inline int alt2(jc_t *c, int a, int b)
{
    int r[2] = {a, b};
    return gr_choice(c->b, r, 2);
}

static inline int opt(jc_t *c, int r)
{
    return gr_repeat(c->b, r, 0, 1);
}

static inline int times(jc_t *c, int r, int n)
{
    return n == 0 ? gr_empty(c->b) : gr_repeat(c->b, r, n, n);
}

static inline int bytes_of(jc_t *c, const char *chars)
{
    uint8_t set[32] = {0};
    for (const unsigned char *p = (const unsigned char *)chars; *p; p++)
        set[*p >> 3] |= (uint8_t)(1u << (*p & 7));
    return gr_byteset(c->b, set);
}

#endif
