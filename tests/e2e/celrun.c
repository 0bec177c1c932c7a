/* celrun - gpusched's verdict on DRA device selectors, for the conformance test against
 * upstream (tests/e2e/test_cel_conformance.sh, which compares it with tools/celcheck): each
 * case of a corpus compiled with formats/cel.h and run on its device, the device read from a
 * ResourceSlice by formats/draobj.h as the scheduler reads it.
 *
 *   celrun CORPUS
 *
 * CORPUS is celcheck's format: blank and '#' lines skipped; "device NAME JSON" defines a
 * device (a resource.k8s.io/v1 Device plus "driver"); any other line is "NAME EXPRESSION", a
 * case, or "!NAME EXPRESSION", a case gpusched refuses by design. For each case one line:
 * its line number, the verdict (true, false, compile, cost, runtime, or unsupported) and,
 * after a tab, gpusched's message. Exit status 2 on a malformed corpus. */
#include "base/error.h"
#include "formats/cel.h"
#include "formats/draobj.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 64

struct named {
    char name[64];
    struct gs_dra_device dev;
};

static int read_device(const char *name, const char *js, struct named *out)
{
    json_error_t je;
    json_t *d = json_loads(js, 0, &je);
    if (!d || !json_is_object(d)) {
        fprintf(stderr, "celrun: device %s: %s\n", name, d ? "not an object" : je.text);
        json_decref(d);
        return -1;
    }
    json_t *driver = json_incref(json_object_get(d, "driver"));
    json_object_del(d, "driver");
    if (!json_object_get(d, "name"))
        json_object_set_new(d, "name", json_string("dev"));
    json_t *slice = json_pack("{s:{s:s},s:{s:o,s:{s:s,s:i},s:s,s:[o]}}", "metadata", "name",
                              "corpus", "spec", "driver", driver, "pool", "name", "pool",
                              "generation", 1, "nodeName", "node", "devices", d);
    struct gs_draobj_slice s;
    struct gs_error err;
    gs_error_init(&err);
    int rc = slice ? gs_draobj_slice_read(slice, &s, &err) : GS_ENOMEM;
    json_decref(slice);
    if (rc || s.ndev != 1) {
        fprintf(stderr, "celrun: device %s: %s\n", name, err.msg);
        if (!rc)
            gs_draobj_slice_release(&s);
        return -1;
    }
    snprintf(out->name, sizeof(out->name), "%s", name);
    out->dev = s.dev[0];
    gs_draobj_slice_release(&s);
    return 0;
}

static const char *verdict(const struct gs_cel *p, const struct gs_dra_device *d,
                           struct gs_error *err)
{
    static const char *const refused[] = {[GS_CEL_SYNTAX] = "compile",
                                          [GS_CEL_UNSUPPORTED] = "unsupported",
                                          [GS_CEL_INVALID] = "compile",
                                          [GS_CEL_COSTLY] = "cost"};
    if (p->refusal)
        return refused[p->refusal];
    int rc = gs_cel_run(p, d, err);
    if (rc == 1 || rc == 0)
        return rc ? "true" : "false";
    return rc == GS_ENOSPC ? "cost" : "runtime";
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: celrun CORPUS\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    struct gs_cel *p = malloc(sizeof(*p));
    struct named *devs = calloc(MAX_DEVICES, sizeof(*devs));
    char *line = malloc(1 << 20);
    if (!f || !p || !devs || !line) {
        fprintf(stderr, "celrun: %s: cannot read\n", argv[1]);
        return 2;
    }
    int ndev = 0, ln = 0, rc = 0;
    while (fgets(line, 1 << 20, f)) {
        ln++;
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
            line[--n] = '\0';
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s || *s == '#')
            continue;
        if (*s == '!')
            s++;
        char *sp = strchr(s, ' ');
        char *rest = sp ? sp + 1 : s + strlen(s);
        if (sp)
            *sp = '\0';
        while (*rest == ' ')
            rest++;
        if (strcmp(s, "device") == 0) {
            char *js = strchr(rest, ' ');
            if (!js || ndev >= MAX_DEVICES) {
                fprintf(stderr, "celrun: %s:%d: bad device line\n", argv[1], ln);
                rc = 2;
                break;
            }
            *js++ = '\0';
            if (read_device(rest, js, &devs[ndev])) {
                rc = 2;
                break;
            }
            ndev++;
            continue;
        }
        const struct gs_dra_device *d = NULL;
        for (int k = 0; k < ndev && !d; k++)
            if (strcmp(devs[k].name, s) == 0)
                d = &devs[k].dev;
        if (!d) {
            fprintf(stderr, "celrun: %s:%d: unknown device \"%s\"\n", argv[1], ln, s);
            rc = 2;
            break;
        }
        struct gs_error err;
        gs_error_init(&err);
        gs_cel_compile(rest, strlen(rest), p, &err);
        const char *v = verdict(p, d, &err);
        printf("%d %s\t%s\n", ln, v, err.msg);
    }
    fclose(f);
    free(p);
    free(devs);
    free(line);
    return rc;
}
