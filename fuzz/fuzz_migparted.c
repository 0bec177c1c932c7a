/* Fuzz target: mig-parted config reader and geometry check. */
#include "formats/migparted.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_migparted *m = NULL;
    if (gs_migparted_parse("fuzz", (const char *)data, size, &m, NULL) == 0) {
        gs_migparted_check(m, -1, NULL);
        for (int c = 0; c < m->nconfigs; c++) {
            bool en;
            struct gs_mig_layout l;
            gs_migparted_resolve(&m->configs[c], 0, gs_catalog_find("A100-80GB"), &en, &l, NULL);
        }
        gs_migparted_free(m);
    }
    return 0;
}
