/* Fuzz target: a cluster snapshot (a List of Nodes and Pods as `kubectl get nodes,pods -A -o
 * json` writes it) as a scenario (formats/clusterscen.h). Whatever the objects hold, the
 * scenario text it makes must parse as a scenario: a text the scenario reader refuses is a
 * bug, and aborts. */
#include "base/buf.h"
#include "base/error.h"
#include "formats/clusterscen.h"
#include "formats/scenario.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *o = json_loadb((const char *)data, size, 0, NULL);
    if (!o)
        return 0;
    json_t *nodes = json_array(), *pods = json_array();
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(o, "items"), i, it)
    {
        const char *k = json_string_value(json_object_get(it, "kind"));
        if (k && strcmp(k, "Node") == 0)
            json_array_append(nodes, it);
        else if (k && strcmp(k, "Pod") == 0)
            json_array_append(pods, it);
    }
    struct gs_error err;
    gs_error_init(&err);
    struct gs_buf y;
    gs_buf_init(&y, 0);
    char *names[GS_SC_MAX_GROUPS] = {0};
    /* now: 2026-12-01; a day's window */
    if (gs_cluster_scenario(nodes, pods, 1796083200.0, 86400, &y, names, &err) == 0) {
        static struct gs_scenario sc;
        if (gs_scenario_parse("fuzz", y.data, y.len, &sc, &err) != 0) {
            fprintf(stderr, "scenario refused: %s\n%s\n", err.msg, y.data);
            abort();
        }
        gs_scenario_release(&sc);
    }
    for (int g = 0; g < GS_SC_MAX_GROUPS; g++)
        free(names[g]);
    gs_buf_release(&y);
    json_decref(nodes);
    json_decref(pods);
    json_decref(o);
    return 0;
}
