/* endpoints.c - the scheduler daemon's HTTP endpoints (sched/endpoints.h): health and
 * readiness from the daemon's flags and the store, /debug/pending from the last cycle's
 * report, /metrics from sched/metrics.c, the dashboard and its state (sched/uistate.c), and
 * the extender's verbs (sched/extender.c), all served by kube/httpd.c. */
#include "endpoints.h"

#include "../base/error.h"
#include "../formats/promtext.h"
#include "extender.h"
#include "../base/flag.h"
#include "claims.h"
#include "metrics.h"
#include "store.h"
#include "uistate.h"

#include <stdlib.h>
#include <string.h>

int gs__endpoints_handle(void *cls, const struct gs_httpd_request *req, struct gs_httpd_reply *rep)
{
    const struct gs_endpoints *s = cls;
    const char *method = req->method, *url = req->url;
    bool ui = strcmp(url, "/ui") == 0 || strcmp(url, "/ui/") == 0 || strcmp(url, "/ui/state") == 0;
    if (ui && strcmp(method, "GET") != 0)
        return gs_httpd_reply(rep, 405, "text/plain",
                              "method not allowed: the dashboard is read only\n");
    if (strcmp(method, "POST") == 0 && s->extender)
        return gs__extender_answer(s->extender, req, rep);
    if (strcmp(method, "GET") != 0)
        return gs_httpd_reply(rep, 405, "text/plain", "method not allowed\n");
    if (strcmp(url, "/healthz") == 0)
        return gs_flag_get(s->fatal) ? gs_httpd_reply(rep, 500, "text/plain", "fatal\n")
                                     : gs_httpd_reply(rep, 200, "text/plain", "ok\n");
    if (strcmp(url, "/readyz") == 0) {
        /* every feed the first cycle waits for (sched/scheduler.c), the DRA kinds too */
        bool ready = gs__store_synced(s->ui.store) && (!s->claims || gs_claims_synced(s->claims)) &&
                     !gs_flag_get(s->fatal);
        return ready ? gs_httpd_reply(rep, 200, "text/plain", "ok\n")
                     : gs_httpd_reply(rep, 503, "text/plain", "informers not synced\n");
    }
    if (strcmp(url, "/debug/pending") == 0)
        return gs__metrics_reply_pending(s->ui.metrics, rep);
    if (strcmp(url, "/metrics") == 0) {
        /* a page cut short by a failed allocation is no answer */
        if (gs__metrics_write(s->ui.metrics, &rep->body))
            return GS_ENOMEM;
        rep->type = GS_PROMTEXT_CONTENT_TYPE;
        return 0;
    }
    if (strcmp(url, "/ui/state") == 0) {
        json_t *doc;
        int rc = gs__uistate_build(&s->ui, &doc);
        if (rc)
            return rc;
        rc = gs_httpd_reply_json(rep, 200, doc, JSON_COMPACT);
        json_decref(doc);
        return rc;
    }
    if (ui) {
        rep->type = "text/html; charset=utf-8";
        return gs_buf_append(&rep->body, gs__ui_page, gs__ui_page_len);
    }
    return gs_httpd_reply(rep, 404, "text/plain", "not found\n");
}
