/* fixtures.h - what several unit tests build the same way: requests for whole GPUs and MIG
 * profiles, and JSON objects from text. Header-only (static functions), one copy per test. */
#ifndef GS_TEST_FIXTURES_H
#define GS_TEST_FIXTURES_H

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

/* A JSON object from text; the test fails if it does not parse. */
static inline json_t *json_of(const char *text)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    cr_assert_not_null(o, "%s", je.text);
    return o;
}

#endif
