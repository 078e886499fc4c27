/* GPT-2 byte-level mapping: every byte value has a printable Unicode code
 * point that stands for it inside BPE token strings. Printable Latin-1 bytes
 * ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) map to themselves; the other 68 map to
 * U+0100 upwards in byte order. */
#ifndef SPLASH_BYTELEVEL_H
#define SPLASH_BYTELEVEL_H

#include <stddef.h>
#include <stdint.h>

/* Code point standing for byte b. */
uint32_t bytelevel_cp(uint8_t b);

/* Byte a code point stands for, or -1 if it stands for none. */
int bytelevel_byte(uint32_t cp);

/* UTF-8 encoding of byte b's code point into out (at most 2 bytes + NUL). */
size_t bytelevel_encode(uint8_t b, char out[3]);

/* Decodes one UTF-8 code point from s (n bytes left); returns its length or
 * 0 if the sequence is invalid or incomplete. */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);

#endif
