/* The web pages (web/ in the source tree) as byte arrays compiled into the
 * binary: build/generated/web_assets.c, written by cmake/embed_web.cmake. */
#ifndef SPLASH_SERVER_WEB_ASSETS_H
#define SPLASH_SERVER_WEB_ASSETS_H

#include <stddef.h>

typedef struct web_asset {
    const char *name; /* file name under web/, e.g. "chat.js" */
    const unsigned char *bytes;
    size_t n_bytes;
} web_asset_t;

extern const web_asset_t web_assets[];
extern const size_t web_n_assets;

#endif
