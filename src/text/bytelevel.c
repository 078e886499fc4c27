#include "text/bytelevel.h"

static int is_self_mapped(int b)
{
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t bytelevel_cp(uint8_t b)
{
    if (is_self_mapped(b))
        return b;
    uint32_t n = 0; /* rank of b among the bytes that are not self-mapped */
    for (int i = 0; i < b; i++)
        n += !is_self_mapped(i);
    return 256 + n;
}

int bytelevel_byte(uint32_t cp)
{
    if (cp < 256)
        return is_self_mapped((int)cp) ? (int)cp : -1;
    uint32_t n = cp - 256;
    for (int b = 0; b < 256; b++)
        if (!is_self_mapped(b) && n-- == 0)
            return b;
    return -1;
}

size_t bytelevel_encode(uint8_t b, char out[3])
{
    uint32_t cp = bytelevel_cp(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = '\0';
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    out[2] = '\0';
    return 2;
}

size_t utf8_decode(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0)
        return 0;
    size_t len;
    uint32_t c, min;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    } else if ((u[0] & 0xE0) == 0xC0) {
        len = 2, c = u[0] & 0x1F, min = 0x80;
    } else if ((u[0] & 0xF0) == 0xE0) {
        len = 3, c = u[0] & 0x0F, min = 0x800;
    } else if ((u[0] & 0xF8) == 0xF0) {
        len = 4, c = u[0] & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (u[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return len;
}
