/* Fuzz target: `gpusched top`'s drawing of a scheduler's /ui/state document (sched/uitext.c),
 * which comes from the network: any JSON (missing fields, wrong types, control bytes, huge
 * numbers) is drawn at a narrow and a wide width, with and without colour, and every line of a
 * frame without colour stays within its width. */
#include "base/buf.h"
#include "sched/uitext.h"

#include <jansson.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *st = json_loadb((const char *)data, size, 0, NULL);
    if (!st)
        return 0;
    static const int widths[] = {40, 160};
    for (int k = 0; k < 4; k++) {
        struct gs_buf b;
        gs_buf_init(&b, 0);
        struct gs_uitext_opts o = {.width = widths[k % 2], .color = k >= 2, .source = "x"};
        if (gs_uitext_render(st, &o, &b) == 0 && !o.color) {
            for (const char *l = b.data; l && *l;) {
                const char *e = strchr(l, '\n');
                if (!e || e - l > o.width)
                    abort();
                l = e + 1;
            }
        }
        gs_buf_release(&b);
    }
    json_decref(st);
    return 0;
}
