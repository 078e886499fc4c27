/* Request bodies into JSON (json_body.h): a scanner that finds one
 * top-level member's raw token without building anything, and the loader
 * that reads a u64 from it. The scanner trusts nothing: every index is
 * checked against len, and anything it does not understand is left to
 * jansson to report. */
#include "server/json_body.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOT_FOUND ((size_t)-1)

static size_t skip_ws(const char *t, size_t len, size_t i)
{
    while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
        i++;
    return i;
}

/* Past the string that opens at t[i] ('"'), or NOT_FOUND if unterminated. */
static size_t skip_string(const char *t, size_t len, size_t i)
{
    for (i++; i < len; i++) {
        if (t[i] == '\\')
            i++;
        else if (t[i] == '"')
            return i + 1;
    }
    return NOT_FOUND;
}

/* Past the value that starts at t[i]: a string, an object or array
 * (brackets counted, strings skipped), or a scalar up to a delimiter. */
static size_t skip_value(const char *t, size_t len, size_t i)
{
    if (i >= len)
        return NOT_FOUND;
    if (t[i] == '"')
        return skip_string(t, len, i);
    if (t[i] == '{' || t[i] == '[') {
        size_t depth = 0;
        while (i < len) {
            if (t[i] == '"') {
                i = skip_string(t, len, i);
                if (i == NOT_FOUND)
                    return NOT_FOUND;
                continue;
            }
            if (t[i] == '{' || t[i] == '[')
                depth++;
            else if ((t[i] == '}' || t[i] == ']') && --depth == 0)
                return i + 1;
            i++;
        }
        return NOT_FOUND;
    }
    size_t start = i;
    while (i < len && !strchr(",}] \t\r\n", t[i]) && t[i] != '\0')
        i++;
    return i > start ? i : NOT_FOUND;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Whether the string body s[0, n) (between the quotes, escapes not yet
 * decoded) equals the ASCII key. */
static bool key_equals(const char *s, size_t n, const char *key)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++, k++) {
        unsigned c = (unsigned char)s[i];
        if (c == '\\') {
            if (++i >= n)
                return false;
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *e = strchr(from, s[i]);
            if (s[i] == 'u') {
                if (i + 4 >= n)
                    return false;
                c = 0;
                for (int d = 1; d <= 4; d++) {
                    int h = hex_digit(s[i + d]);
                    if (h < 0)
                        return false;
                    c = c * 16 + (unsigned)h;
                }
                i += 4;
            } else if (e && *e) {
                c = (unsigned char)to[e - from];
            } else {
                return false;
            }
        }
        if (c == 0 || c >= 0x80 || key[k] != (char)c)
            return false; /* the key is ASCII: any other code point differs */
    }
    return key[k] == '\0';
}

int json_raw_member(const char *t, size_t len, const char *key, size_t *off, size_t *n)
{
    size_t i = skip_ws(t, len, 0);
    if (i >= len || t[i] != '{')
        return -1;
    i = skip_ws(t, len, i + 1);
    if (i < len && t[i] == '}')
        return 0;
    for (;;) {
        if (i >= len || t[i] != '"')
            return -1;
        size_t k0 = i;
        i = skip_string(t, len, i);
        if (i == NOT_FOUND)
            return -1;
        bool is_key = key_equals(t + k0 + 1, i - k0 - 2, key);
        i = skip_ws(t, len, i);
        if (i >= len || t[i] != ':')
            return -1;
        size_t v0 = skip_ws(t, len, i + 1);
        i = skip_value(t, len, v0);
        if (i == NOT_FOUND)
            return -1;
        if (is_key) {
            *off = v0;
            *n = i - v0;
            return 1;
        }
        i = skip_ws(t, len, i);
        if (i < len && t[i] == '}')
            return 0;
        if (i >= len || t[i] != ',')
            return -1;
        i = skip_ws(t, len, i + 1);
    }
}

bool json_raw_is_integer(const char *tok, size_t n)
{
    size_t i = n && tok[0] == '-' ? 1 : 0;
    if (i >= n)
        return false;
    if (tok[i] == '0')
        return i + 1 == n;
    for (; i < n; i++)
        if (tok[i] < '0' || tok[i] > '9')
            return false;
    return true;
}

int json_raw_u64(const char *tok, size_t n, uint64_t *out)
{
    if (!json_raw_is_integer(tok, n) || tok[0] == '-')
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(tok[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* The same 64 bits as a json_int_t, without an implementation-defined conversion. */
static json_int_t u64_bits(uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX)
        return (json_int_t)v;
    return (json_int_t)(v - (uint64_t)INT64_MAX - 1) + INT64_MIN;
}

json_body_status_t json_body_load(const char *body, size_t len, const char *u64_key, json_t **out, json_error_t *jerr)
{
    const size_t flags = JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL;
    size_t off = 0, n = 0;
    *out = NULL;
    if (!u64_key || json_raw_member(body, len, u64_key, &off, &n) != 1 || !json_raw_is_integer(body + off, n)) {
        *out = json_loadb(body, len, flags, jerr);
        return *out ? JSON_BODY_OK : JSON_BODY_MALFORMED;
    }
    uint64_t v = 0;
    bool is_in_range = json_raw_u64(body + off, n, &v) == 0;
    if (is_in_range && v <= (uint64_t)INT64_MAX) {
        *out = json_loadb(body, len, flags, jerr); /* jansson holds it as it is */
        return *out ? JSON_BODY_OK : JSON_BODY_MALFORMED;
    }
    /* blank the literal so that jansson parses the rest; its own errors come first */
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return JSON_BODY_NOMEM;
    memcpy(copy, body, len);
    copy[off] = '0';
    memset(copy + off + 1, ' ', n - 1);
    *out = json_loadb(copy, len, flags, jerr);
    free(copy);
    if (!*out)
        return JSON_BODY_MALFORMED;
    if (!is_in_range) {
        json_decref(*out);
        *out = NULL;
        return JSON_BODY_U64_RANGE;
    }
    json_object_set_new(*out, u64_key, json_integer(u64_bits(v)));
    return JSON_BODY_OK;
}

static bool is_text_key(const char *key)
{
    static const char *const keys[] = {"content",           "text",    "prompt", "system", "input", "instructions",
                                       "reasoning_content", "thinking"};
    for (size_t i = 0; key && i < sizeof keys / sizeof *keys; i++)
        if (!strcmp(key, keys[i]))
            return true;
    return false;
}

static bool is_data_key(const char *key)
{
    return !strcmp(key, "input") || !strcmp(key, "arguments");
}

static bool has_nul(const json_t *v)
{
    return json_is_string(v) && memchr(json_string_value(v), 0, json_string_length(v)) != NULL;
}

/* v at path where[0..n); is_text: v is a text member's value or an element of one's array. */
static int nul_walk(const json_t *v, bool is_text, char *where, size_t cap, size_t n)
{
    if (has_nul(v))
        return !is_text;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)
        {
            if (is_data_key(k) && json_is_object(x))
                continue; /* a tool call's arguments as an object: data, written back by length */
            int w = snprintf(where + n, cap - n, "%s%s", n ? "." : "", k);
            size_t m = w < 0 || (size_t)w >= cap - n ? cap - 1 : n + (size_t)w;
            if (nul_walk(x, is_text_key(k), where, cap, m))
                return 1;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            int w = snprintf(where + n, cap - n, "[%zu]", i);
            size_t m = w < 0 || (size_t)w >= cap - n ? cap - 1 : n + (size_t)w;
            if (nul_walk(x, is_text && json_is_string(x), where, cap, m))
                return 1;
        }
    }
    where[n] = '\0';
    return 0;
}

int json_body_nul_at(const json_t *doc, char *where, size_t cap)
{
    where[0] = '\0';
    return nul_walk(doc, false, where, cap, 0);
}
