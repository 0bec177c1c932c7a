/* The gpusched.io/devices codec (formats/devices.h): each kind reads and writes back
 * unchanged; anything outside the grammar is refused whole. */
#include "base/error.h"
#include "formats/devices.h"

#include <criterion/criterion.h>
#include <string.h>

Test(devices, every_kind_reads_and_writes_back_unchanged)
{
    static const char *const good[] = {
        "gpu=0,1", "replica=3", "milli=2:500", "mig=0:3g.40gb@4,2:1g.10gb@6", "gpu=15", "gpu="};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct gs_devices d;
        cr_assert_eq(gs_devices_parse(good[i], strlen(good[i]), &d), 0, "'%s' is refused", good[i]);
        char out[GS_DEVICES_TEXT_MAX];
        int n = gs_devices_format(&d, out, sizeof(out));
        cr_expect_eq(n, (int)strlen(good[i]), "'%s' written as %d bytes", good[i], n);
        cr_expect_str_eq(out, good[i], "'%s' written back as '%s'", good[i], out);
    }
}

Test(devices, mig_entries_carry_profile_and_start)
{
    struct gs_devices d;
    const char *t = "mig=1:2g.20gb@2,3:7g.80gb@0";
    cr_assert_eq(gs_devices_parse(t, strlen(t), &d), 0);
    cr_expect_eq(d.kind, GS_DEVICES_MIG);
    cr_expect_eq(d.n, 2);
    cr_expect_eq(d.item[0].gpu, 1);
    cr_expect_str_eq(d.item[0].profile, "2g.20gb");
    cr_expect_eq(d.item[0].start, 2);
    cr_expect_eq(d.item[1].gpu, 3);
    cr_expect_eq(d.item[1].start, 0);
    t = "milli=0:250";
    cr_assert_eq(gs_devices_parse(t, strlen(t), &d), 0);
    cr_expect_eq(d.item[0].milli, 250);
    cr_expect_eq(d.item[0].start, -1);
}

Test(devices, anything_outside_the_grammar_is_refused_whole)
{
    static const char *const bad[] = {"",
                                      "gpu",
                                      "gpus=0",
                                      "gpu=0,",
                                      "gpu=,0",
                                      "gpu=-1",
                                      "gpu=+1",
                                      "gpu= 1",
                                      "gpu=0x1",
                                      "gpu=1234567890",
                                      "milli=0",
                                      "milli=0:0",
                                      "milli=0:1000",
                                      "milli=0:5x",
                                      "mig=0",
                                      "mig=0:@4",
                                      "mig=0:3g.40gb",
                                      "mig=0:3g.40gb@",
                                      "mig=0:3g,40gb@4",
                                      "mig=0:3g.40gb@4x",
                                      "gpu=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct gs_devices d;
        cr_expect_eq(gs_devices_parse(bad[i], strlen(bad[i]), &d), GS_EINVAL, "'%s' is accepted",
                     bad[i]);
        cr_expect_eq(d.n, 0, "'%s' left %d entries behind", bad[i], d.n);
    }
    char longer[300];
    memset(longer, '0', sizeof(longer));
    memcpy(longer, "gpu=", 4);
    struct gs_devices d;
    cr_expect_eq(gs_devices_parse(longer, sizeof(longer), &d), GS_EINVAL);
    /* a length stops the reader: the bytes after it are not read */
    cr_expect_eq(gs_devices_parse("gpu=1,2", 5, &d), 0);
    cr_expect_eq(d.n, 1);
}

Test(devices, the_writer_refuses_what_the_reader_would)
{
    struct gs_devices d = {.kind = GS_DEVICES_MILLI, .n = 1, .item = {{.gpu = 0, .milli = 1000}}};
    char out[64];
    cr_expect_eq(gs_devices_format(&d, out, sizeof(out)), GS_EINVAL);
    cr_expect_str_eq(out, "");
    d = (struct gs_devices){.kind = GS_DEVICES_GPU, .n = 2, .item = {{.gpu = 10}, {.gpu = 11}}};
    cr_expect_eq(gs_devices_format(&d, out, 8), GS_ENOSPC, "'gpu=10,11' does not fit in 8");
    cr_expect_str_eq(out, "");
    cr_expect_eq(gs_devices_format(&d, out, sizeof(out)), 9);
}
