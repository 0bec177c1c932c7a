/* Fuzz target: the dynamic-MIG annotations on a Node: the scheduler's desired layout
 * (gpusched.io/mig-desired) and the agent's inventory with what became of it (generation,
 * mig_state, mig_error), the GPUs' links (numa, pci, nvlink) and sharing modes. What a reader
 * accepts, its writer writes and the reader takes back unchanged; anything else aborts. */
#include "base/error.h"
#include "formats/inventory.h"
#include "formats/migdesired.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gs_mig_desired d, back;
    struct gs_error err;
    gs_error_init(&err);
    if (gs_mig_desired_read((const char *)data, size, &d, &err) == 0) {
        char *text = gs_mig_desired_write(&d);
        if (!text || gs_mig_desired_read(text, strlen(text), &back, &err) != 0 ||
            memcmp(&d, &back, sizeof(d)) != 0)
            abort();
        for (int k = 0; k < d.ngpus; k++)
            if (gs_mig_desired_find(&d, d.gpus[k].index) != &d.gpus[k])
                abort();
        free(text);
    }
    static struct gs_inventory inv, iback;
    gs_error_init(&err);
    if (gs_inventory_read((const char *)data, size, &inv, &err) == 0) {
        char *text = gs_inventory_write(&inv);
        if (text &&
            (gs_inventory_read(text, strlen(text), &iback, &err) != 0 ||
             iback.generation != inv.generation || strcmp(iback.mig_state, inv.mig_state) != 0 ||
             strcmp(iback.mig_error, inv.mig_error) != 0 || iback.ngpus != inv.ngpus))
            abort();
        for (int k = 0; text && k < inv.ngpus; k++) {
            const struct gs_inv_gpu *a = &inv.gpus[k], *b = &iback.gpus[k];
            if (a->has_numa != b->has_numa || a->numa != b->numa || strcmp(a->pci, b->pci) != 0 ||
                memcmp(a->nvlink, b->nvlink, sizeof(a->nvlink)) != 0 || a->mode != b->mode ||
                a->replicas != b->replicas)
                abort();
        }
        free(text);
    }
    return 0;
}
