/* The chat template's output buffer and its tojson (text/chat_json.h):
 * JSON.stringify with Python's separators, numbers and key order as
 * JavaScript prints them (chat.h lists the rules). */
#include "text/chat_json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/chat.h"

#define JS_NUMBER_MAX 32 /* longest JavaScript number text: "-1.2345678901234567e-308" and the NUL */

/* ---- output ------------------------------------------------------------- */

void chat_sb_put(chat_sbuf_t *b, const char *s, size_t n)
{
    if (b->is_oom)
        return;
    if (n >= SIZE_MAX / 2 - b->len) {
        b->is_oom = true;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->is_oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void chat_sb_puts(chat_sbuf_t *b, const char *s)
{
    chat_sb_put(b, s, strlen(s));
}

/* ---- JavaScript numbers ------------------------------------------------- */

/* Digits and decimal exponent of "d.ddde±x" (printf's %e). */
static int split_exp(const char *s, char *digits, int *exp10)
{
    int k = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9')
            digits[k++] = *s;
    *exp10 = atoi(s + 1);
    return k;
}

static double digits_value(const char *digits, int k, int exp10)
{
    char buf[48];
    int n = 0;
    buf[n++] = digits[0];
    buf[n++] = '.';
    for (int i = 1; i < k; i++)
        buf[n++] = digits[i];
    snprintf(buf + n, sizeof buf - (size_t)n, "e%d", exp10);
    return strtod(buf, NULL);
}

/* Adds one unit (delta +1) or takes one away (-1) in the last of k digits;
 * returns the new digit count (a borrow out of the leading digit drops it). */
static int step_digits(char *digits, int k, int *exp10, int delta)
{
    int i = k - 1;
    if (delta > 0) {
        while (i >= 0 && digits[i] == '9')
            digits[i--] = '0';
        if (i >= 0) {
            digits[i]++;
        } else {
            digits[0] = '1';
            (*exp10)++;
        }
        return k;
    }
    while (i >= 0 && digits[i] == '0')
        digits[i--] = '9';
    if (i < 0)
        return k; /* all zeros: not reached for a non-zero value */
    digits[i]--;
    if (digits[0] == '0' && k > 1) {
        memmove(digits, digits + 1, (size_t)k - 1);
        (*exp10)--;
        k--;
    }
    return k;
}

/* Number.prototype.toString() of a finite double: the fewest significant
 * digits that read back as v, placed as ECMA-262 says (plain notation for
 * decimal exponents -7 < e < 21, else d.ddde±x). Checked against V8 on
 * 700,000 doubles, every power of two among them. */
static size_t js_number(double v, char out[JS_NUMBER_MAX])
{
    if (v == 0) /* and -0 */
        return (size_t)snprintf(out, JS_NUMBER_MAX, "0");
    char *o = out;
    if (v < 0) {
        *o++ = '-';
        v = -v;
    }
    char buf[40], digits[24];
    int k = 0, exp10 = 0;
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
        k = split_exp(buf, digits, &exp10);
        double r = digits_value(digits, k, exp10);
        if (r == v)
            break;
        /* The nearest prec-digit decimal is outside v's rounding interval. At a
         * power of two that interval is lopsided, and the neighbour on v's
         * other side can still be inside it (V8 then prints that one). */
        char alt[24];
        int alt_exp = exp10;
        memcpy(alt, digits, (size_t)k);
        int alt_k = step_digits(alt, k, &alt_exp, r < v ? 1 : -1);
        if (digits_value(alt, alt_k, alt_exp) == v) {
            memcpy(digits, alt, (size_t)alt_k);
            k = alt_k;
            exp10 = alt_exp;
            break;
        }
    }
    while (k > 1 && digits[k - 1] == '0')
        k--;
    int n = exp10 + 1; /* digits before the decimal point */
    if (k <= n && n <= 21) {
        memcpy(o, digits, (size_t)k);
        o += k;
        for (int i = 0; i < n - k; i++)
            *o++ = '0';
    } else if (0 < n && n <= 21) {
        memcpy(o, digits, (size_t)n);
        o += n;
        *o++ = '.';
        memcpy(o, digits + n, (size_t)(k - n));
        o += k - n;
    } else if (-6 < n && n <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -n; i++)
            *o++ = '0';
        memcpy(o, digits, (size_t)k);
        o += k;
    } else {
        *o++ = digits[0];
        if (k > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)k - 1);
            o += k - 1;
        }
        o += snprintf(o, JS_NUMBER_MAX - (size_t)(o - out), "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
    }
    *o = '\0';
    return (size_t)(o - out);
}

/* ---- tojson ------------------------------------------------------------- */

/* JSON.stringify of a string: only '"', '\' and control characters escaped. */
static void put_json_string(chat_sbuf_t *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    chat_sb_put(b, "\"", 1);
    size_t run = 0; /* start of the pending unescaped run */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        chat_sb_put(b, s + run, i - run);
        run = i + 1;
        char esc[7] = {'\\', 0};
        size_t k = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            k = 6;
        }
        chat_sb_put(b, esc, k);
    }
    chat_sb_put(b, s + run, n - run);
    chat_sb_put(b, "\"", 1);
}

typedef struct json_key {
    const char *key;
    size_t key_len;
    json_t *value;
    uint32_t index; /* the key's value when is_index */
    bool is_index;
} json_key_t;

/* An array index in JavaScript's sense: "0".."4294967294", no leading zero.
 * Objects list such keys first, in numeric order. */
static bool key_array_index(const char *k, size_t n, uint32_t *index)
{
    if (n == 0 || n > 10 || (n > 1 && k[0] == '0'))
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (k[i] < '0' || k[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(k[i] - '0');
    }
    if (v > 4294967294u)
        return false;
    *index = (uint32_t)v;
    return true;
}

static int cmp_key_index(const void *a, const void *b)
{
    uint32_t x = ((const json_key_t *)a)->index, y = ((const json_key_t *)b)->index;
    return (x > y) - (x < y);
}

/* JSON.stringify-like output with separators ", " and ": " (the reference's
 * tojson without arguments). -1 only for nesting or memory limits. */
static int put_json_at(chat_sbuf_t *b, const json_t *v, int depth, err_t *err)
{
    if (depth > CHAT_MAX_JSON_DEPTH)
        return err_set(err, "nested deeper than %d levels", CHAT_MAX_JSON_DEPTH);
    char num[JS_NUMBER_MAX];
    switch (json_typeof(v)) {
    case JSON_NULL: chat_sb_puts(b, "null"); return 0;
    case JSON_TRUE: chat_sb_puts(b, "true"); return 0;
    case JSON_FALSE: chat_sb_puts(b, "false"); return 0;
    case JSON_INTEGER: /* the reference holds every number as a double */
        chat_sb_put(b, num, js_number((double)json_integer_value(v), num));
        return 0;
    case JSON_REAL: chat_sb_put(b, num, js_number(json_real_value(v), num)); return 0;
    case JSON_STRING: put_json_string(b, json_string_value(v), json_string_length(v)); return 0;
    case JSON_ARRAY:
        chat_sb_put(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                chat_sb_put(b, ", ", 2);
            if (put_json_at(b, json_array_get(v, i), depth + 1, err))
                return -1;
        }
        chat_sb_put(b, "]", 1);
        return 0;
    case JSON_OBJECT: break;
    }
    size_t n = json_object_size(v), n_keys = 0;
    if (n == 0) {
        chat_sb_puts(b, "{}");
        return 0;
    }
    json_key_t *keys = malloc(n * sizeof *keys);
    if (!keys)
        return err_set(err, "out of memory");
    /* array-index keys first, in numeric order, then the rest in the object's (insertion) order */
    for (int pass = 0; pass < 2; pass++) {
        size_t first = n_keys;
        for (void *it = json_object_iter((json_t *)v); it && n_keys < n; it = json_object_iter_next((json_t *)v, it)) {
            json_key_t k = {.key = json_object_iter_key(it),
                            .key_len = json_object_iter_key_len(it),
                            .value = json_object_iter_value(it)};
            k.is_index = key_array_index(k.key, k.key_len, &k.index);
            if (k.is_index == (pass == 0))
                keys[n_keys++] = k;
        }
        if (pass == 0)
            qsort(keys + first, n_keys - first, sizeof *keys, cmp_key_index);
    }
    int rc = 0;
    chat_sb_put(b, "{", 1);
    for (size_t i = 0; i < n_keys && rc == 0; i++) {
        if (i)
            chat_sb_put(b, ", ", 2);
        put_json_string(b, keys[i].key, keys[i].key_len);
        chat_sb_put(b, ": ", 2);
        rc = put_json_at(b, keys[i].value, depth + 1, err);
    }
    chat_sb_put(b, "}", 1);
    free(keys);
    return rc;
}

int chat_put_json(chat_sbuf_t *b, const json_t *v, err_t *err)
{
    return put_json_at(b, v, 0, err);
}
