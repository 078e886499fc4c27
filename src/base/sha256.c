#include "base/sha256.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHA256_READ_CHUNK (1 << 20) /* bytes read per step when hashing a file */

static void to_hex(const unsigned char *md, char hex[SHA256_HEX_LEN])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
}

int sha256_hex(const void *data, size_t n, char hex[SHA256_HEX_LEN], err_t *err)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    if (!EVP_Digest(data, n, md, &md_len, EVP_sha256(), NULL) || md_len != 32)
        return err_set(err, "SHA-256 failed");
    to_hex(md, hex);
    return 0;
}

int sha256_file_hex(const char *path, char hex[SHA256_HEX_LEN], err_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return err_set(err, "%s: %s", path, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char *buf = malloc(SHA256_READ_CHUNK);
    int rc = -1;
    if (!ctx || !buf || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
        err_set(err, "SHA-256: out of memory");
        goto done;
    }
    size_t n;
    while ((n = fread(buf, 1, SHA256_READ_CHUNK, f)) > 0) {
        if (!EVP_DigestUpdate(ctx, buf, n)) {
            err_set(err, "SHA-256 failed");
            goto done;
        }
    }
    if (ferror(f)) {
        err_set(err, "%s: read error", path);
        goto done;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    if (!EVP_DigestFinal_ex(ctx, md, &md_len) || md_len != 32) {
        err_set(err, "SHA-256 failed");
        goto done;
    }
    to_hex(md, hex);
    rc = 0;
done:
    free(buf);
    EVP_MD_CTX_free(ctx);
    fclose(f);
    return rc;
}
