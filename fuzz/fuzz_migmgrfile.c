/* Fuzz target: the MigManager documents of a mig-parted manifest (mig validate). */
#include "formats/migmgrfile.h"
#include "formats/migparted.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gs_migparted *m = NULL;
    if (gs_migparted_parse("fuzz", (const char *)data, size, &m, NULL) != 0)
        m = NULL;
    gs_migmgr_check_text("fuzz", (const char *)data, size, m, -1, NULL);
    gs_migmgr_check_text("fuzz", (const char *)data, size, m, gs_catalog_find("H200-141GB"), NULL);
    gs_migparted_free(m);
    return 0;
}
