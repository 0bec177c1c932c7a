/* Fuzz target: the node agent's readers of outside text: the fake GPU description (JSON, with
 * its instances' and processes' readings), the article's gpu-monitor-config (gpu-metrics.json)
 * and the gpusched.io/devices annotation. The first two read files, so the input is written to
 * a scratch file first. */
#include "agent/agent.h"
#include "agent/gpu.h"
#include "base/error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/gs-fuzz-agent-%d.json", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    struct gs_error err;
    gs_error_init(&err);
    struct gs_gpu_backend *b = NULL;
    if (gs_gpu_open_fake(path, &b, &err) == 0) {
        struct gs_gpu_metrics m;
        struct gs_mig_inst in[8];
        struct gs_mig_metrics mm;
        struct gs_gpu_proc pr[GS_AGENT_MAX_PROCS];
        for (int i = 0; i < b->ops->count(b); i++) {
            b->ops->metrics(b, i, &m);
            int ni = b->ops->mig_list(b, i, in, 8);
            for (int q = 0; q < ni; q++)
                b->ops->mig_metrics(b, i, in[q].gi_id, &mm);
            b->ops->processes(b, i, pr, GS_AGENT_MAX_PROCS);
            b->ops->mig_create(b, i, 9, 4, NULL);
        }
        gs_gpu_close(b);
    }
    static struct gs_agent_opts o;
    memset(&o, 0, sizeof(o));
    gs_error_init(&err);
    (void)gs_agent_monitor_config(path, &o, &err);
    unlink(path);
    char ann[256];
    size_t n = size < sizeof(ann) - 1 ? size : sizeof(ann) - 1;
    memcpy(ann, data, n);
    ann[n] = '\0';
    int gpu[16], start[16];
    (void)gs_agent_devices(ann, gpu, start, 16);
    return 0;
}
