/* httpget.h - one plain HTTP GET of a bounded document (libcurl), for clients of gpusched's
 * own HTTP endpoints: `gpusched top` reads a scheduler's /ui/state with it. No credentials, no
 * redirects; http:// and https:// (verified against the system's CAs) only.
 * Thread-safe (one curl handle per call) once libcurl is initialised; the first call
 * initialises it when nothing did. */
#ifndef GS_KUBE_HTTPGET_H
#define GS_KUBE_HTTPGET_H

#include "../base/buf.h"

struct gs_error;

/* GET url into out (reset first), at most max bytes (0: 16 MiB), within timeout_s seconds
 * (<= 0: 10). Returns 0 on a 2xx reply; GS_EINVAL for a URL that is not http(s)://;
 * GS_ENOSPC for a body over max; GS_EIO when the server cannot be reached or answers
 * otherwise (*status, when not NULL, holds the HTTP status, 0 without a reply). err says
 * which, naming the URL. */
int gs_http_get(const char *url, double timeout_s, size_t max, struct gs_buf *out, long *status,
                struct gs_error *err);

#endif
