/* fixtures.h - what several unit tests build the same way: requests for whole GPUs and MIG
 * profiles, and JSON objects from text. Header-only (static functions), one copy per test. */
#ifndef GS_TEST_FIXTURES_H
#define GS_TEST_FIXTURES_H

#include "base/rng.h"
#include "core/workload.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* gpus whole GPUs, 1 CPU, 1 GiB */
static inline struct gs_request gpu_req(int gpus)
{
    struct gs_request r;
    memset(&r, 0, sizeof(r));
    r.kind = GS_REQ_GPU;
    r.gpus = (uint8_t)gpus;
    r.milli = GS_MILLI;
    r.cpu_milli = 1000;
    r.mem_mib = 1024;
    return r;
}

/* one MIG instance of the profile, 1 CPU */
static inline struct gs_request mig_req(const char *profile)
{
    struct gs_request r;
    memset(&r, 0, sizeof(r));
    r.kind = GS_REQ_MIG;
    r.gpus = 1;
    snprintf(r.mig, sizeof(r.mig), "%s", profile);
    r.cpu_milli = 1000;
    return r;
}

/* A random small request, drawn as the engine tests draw them: a CPU share, then one of 1-2
 * whole GPUs, a milli share, a 1g.10gb slice or no GPU. */
static inline struct gs_request random_req(struct gs_rng *rng)
{
    struct gs_request r;
    memset(&r, 0, sizeof(r));
    r.cpu_milli = 500 + (int64_t)gs_rng_below(rng, 4000);
    r.mem_mib = 512;
    switch (gs_rng_below(rng, 4)) {
    case 0:
        r = gpu_req(1 + (int)gs_rng_below(rng, 2));
        break;
    case 1:
        r.kind = GS_REQ_FRACTION;
        r.gpus = 1;
        r.milli = (int16_t)(100 + gs_rng_below(rng, 800));
        break;
    case 2:
        r = mig_req("1g.10gb");
        break;
    default:
        r.kind = GS_REQ_NONE;
    }
    return r;
}

/* A JSON object from text; the test fails if it does not parse. */
static inline json_t *json_of(const char *text)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    cr_assert_not_null(o, "%s", je.text);
    return o;
}

#endif
