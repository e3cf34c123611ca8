/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * assets.c: the status page's style and script, built into the binary
 * from src/admin/assets/ (the Makefile runs tools/embed.sh into
 * build/gen/admin_assets.h), so ferry serves its page with nothing from
 * elsewhere and nothing to install beside it.
 */
#include <string.h>

#include "admin/internal.h"

/* Generated into build/gen (on the include path), not a file of src/. */
#include <admin_assets.h>

static const struct {
    const char *name, *ctype;
    const unsigned char *p;
    size_t len;
} assets[] = {
    {"app.css", "text/css; charset=utf-8", asset_app_css, sizeof(asset_app_css)},
    {"app.js", "text/javascript; charset=utf-8", asset_app_js, sizeof(asset_app_js)},
};

const unsigned char *admin_asset(const char *name, size_t *len, const char **ctype)
{
    for (size_t i = 0; i < sizeof(assets) / sizeof(assets[0]); i++) {
        if (strcmp(assets[i].name, name) == 0) {
            *len = assets[i].len;
            *ctype = assets[i].ctype;
            return assets[i].p;
        }
    }
    return NULL;
}
