/* Fuzz target: what the DRA driver gpu.gpusched.io reads from outside (agent/dra.h,
 * formats/draslice.h): the kubelet's NodePrepareResources, NodeUnprepareResources and
 * RegistrationStatus bytes, the ResourceClaim the API serves (the input as JSON: its uid,
 * allocation and results drive prepare on a fake A100 in MIG mode), the checkpoint file read at
 * start, and device names. Each input gets a fresh driver and backend in a scratch folder. */
#include "agent/dra.h"
#include "agent/gpu.h"
#include "base/error.h"
#include "formats/draslice.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint8_t *in_data;
static size_t in_size;

static int get_claim(void *user, const char *ns, const char *name, json_t **out,
                     struct gs_error *err)
{
    (void)user, (void)ns, (void)name;
    json_error_t je;
    *out = json_loadb((const char *)in_data, in_size, 0, &je);
    return *out ? 0 : gs_error_set(err, GS_ENOTFOUND, "not found");
}

/* A request naming claim "c" (uid "u") of namespace "n", packed by hand: Claim{1:"n",2:"u",3:"c"}
 * in field 1. */
static const uint8_t one_claim[] = {0x0a, 0x09, 0x0a, 0x01, 'n', 0x12, 0x01, 'u', 0x1a, 0x01, 'c'};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[64], path[160], cmd[200];
    snprintf(dir, sizeof(dir), "/tmp/gs-fuzz-dra-%d", (int)getpid());
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0 || mkdir(dir, 0700))
        return 0;
    snprintf(path, sizeof(path), "%s/gpus.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    fputs("{\"gpus\":[{\"model\":\"A100-80GB\",\"mig\":true},{\"model\":\"H100-80GB\"}]}", f);
    fclose(f);
    struct gs_error err;
    gs_error_init(&err);
    struct gs_gpu_backend *b = NULL;
    if (gs_gpu_open_fake(path, &b, &err))
        return 0;
    in_data = data;
    in_size = size;
    char plugins[100], reg[100], cdi[100];
    snprintf(plugins, sizeof(plugins), "%s/plugins", dir);
    snprintf(reg, sizeof(reg), "%s/registry", dir);
    snprintf(cdi, sizeof(cdi), "%s/cdi", dir);
    struct gs_dra_opts o = {.node = "node-1",
                            .plugins_dir = plugins,
                            .registry_dir = reg,
                            .cdi_dir = cdi,
                            .dynamic_mig = true,
                            .get_claim = get_claim};
    struct gs_dra *d = NULL;
    if (gs_dra_new(&o, b, NULL, &d, &err) == 0) {
        uint8_t *out = NULL;
        size_t len;
        char why[512];
        /* the input as the kubelet's bytes */
        for (int call = GS_DRA_GET_INFO; call <= GS_DRA_UNPREPARE; call++) {
            gs__dra_answer(d, (enum gs_dra_call)call, data, size, &out, &len, why, sizeof(why));
            free(out);
        }
        /* the input as the claim the API serves */
        gs__dra_answer(d, GS_DRA_PREPARE, one_claim, sizeof(one_claim), &out, &len, why,
                       sizeof(why));
        free(out);
        gs_dra_sync(d, NULL, 0, &err);
        gs__dra_answer(d, GS_DRA_UNPREPARE, one_claim, sizeof(one_claim), &out, &len, why,
                       sizeof(why));
        free(out);
        gs_dra_free(d);
        d = NULL;
    }
    /* the input as the checkpoint read at start */
    snprintf(path, sizeof(path), "%s/gpu.gpusched.io/checkpoint.json", plugins);
    if ((f = fopen(path, "wb"))) {
        fwrite(data, 1, size, f);
        fclose(f);
        if (gs_dra_new(&o, b, NULL, &d, &err) == 0)
            gs_dra_free(d);
    }
    /* the input as a device name */
    char name[96];
    size_t n = size < sizeof(name) - 1 ? size : sizeof(name) - 1;
    memcpy(name, data, n);
    name[n] = '\0';
    struct gs_dra_devref r;
    if (gs_draslice_parse_name(name, &r, &err) == 0)
        (void)gs_draslice_find_profile(gs_catalog_find("A100-80GB"), r.profile);
    gs_gpu_close(b);
    if (system(cmd) != 0)
        return 0;
    return 0;
}
