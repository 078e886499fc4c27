/* SHA-256 fingerprints (OpenSSL libcrypto does the hashing). */
#ifndef SPLASH_SHA256_H
#define SPLASH_SHA256_H

#include <stddef.h>

#include "base/err.h"

#define SHA256_HEX_LEN 65 /* 64 hex digits and the NUL */

/* Hashes n bytes; hex receives 64 lowercase hex digits. */
int sha256_hex(const void *data, size_t n, char hex[SHA256_HEX_LEN], err_t *err);

/* Hashes a whole file, streaming. */
int sha256_file_hex(const char *path, char hex[SHA256_HEX_LEN], err_t *err);

#endif
