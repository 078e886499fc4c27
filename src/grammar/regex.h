/* The regex subset of JSON Schema's `pattern` (ECMA-262 syntax), compiled
 * into grammar rules over the JSON text of a string's contents.
 *
 * Supported: literals and escapes (\n \r \t \f \v \0 \xHH \uHHHH \cX and
 * escaped punctuation), `.` (any character but \n \r U+2028 U+2029), classes
 * [...] with ranges and negation, \d \w \s \D \W \S (ECMA meanings), the
 * quantifiers * + ? {n} {n,} {n,m} (a lazy `?` suffix is accepted: laziness
 * does not change the language), groups (...) (?:...) (?<name>...),
 * alternation, and the anchors ^ and $ at the start and end of a top-level
 * alternative. An alternative without ^ may begin anywhere in the string
 * (compiled as any characters before it), one without $ may end anywhere.
 * Anything else (backreferences, lookaround, word boundaries, Unicode
 * property escapes, anchors elsewhere) is an error naming the construct.
 *
 * The rules match the canonical JSON encoding of the characters (what
 * JSON.stringify writes: \" \\ \b \f \n \r \t, \u00xx for other control
 * characters, everything else raw UTF-8); the free characters around an
 * unanchored match accept every encoding JSON allows. */
#ifndef SPLASH_REGEX_H
#define SPLASH_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "grammar/grammar.h"

#define RX_MAX_PATTERN 4096 /* bytes of one pattern */
#define RX_MAX_DEPTH 64     /* nesting of groups */

/* One code point of the class (ranges as in gr_codepoints), as JSON string
 * text in its canonical encoding. A class with no code point gives a rule
 * that matches nothing. */
int rx_json_char_class(gr_builder_t *b, const uint32_t *ranges, int n_ranges, bool is_negated);

/* The JSON string contents (without the quotes) whose decoded text matches
 * the pattern. any_char: a rule for one JSON string character in any
 * encoding (the free text around unanchored matches). -1 and err on a
 * pattern outside the subset (or the builder failed). */
int rx_compile(gr_builder_t *b, const char *pattern, size_t len, int any_char, err_t *err);

#endif
