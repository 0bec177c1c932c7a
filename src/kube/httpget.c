/* httpget.c - one bounded HTTP GET (kube/httpget.h). */
#include "httpget.h"

#include "../base/error.h"

#include <curl/curl.h>

#include <stdbool.h>
#include <string.h>

#define DEFAULT_MAX ((size_t)16 << 20)

struct sink {
    struct gs_buf *b;
    size_t max;
    bool over;
};

static size_t collect(char *p, size_t sz, size_t n, void *user)
{
    struct sink *s = user;
    if (s->b->len + sz * n <= s->max && gs_buf_append(s->b, p, sz * n) == 0)
        return sz * n;
    s->over = true;
    return 0;
}

int gs_http_get(const char *url, double timeout_s, size_t max, struct gs_buf *out, long *status,
                struct gs_error *err)
{
    long st = 0;
    int ret = GS_EIO;
    if (status)
        *status = 0;
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
        return gs_error_set(err, GS_EINVAL, "'%s': expected an http:// or https:// URL", url);
    gs_buf_reset(out);
    CURL *h = curl_easy_init();
    if (!h)
        return gs_error_set(err, GS_ENOMEM, "GET %s: out of memory", url);
    struct sink sk = {out, max ? max : DEFAULT_MAX, false};
    long ms = (long)((timeout_s > 0 ? timeout_s : 10) * 1000);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "gpusched/0.1");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sk);
    CURLcode cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    if (status)
        *status = st;
    if (sk.over)
        ret =
            gs_error_set(err, GS_ENOSPC, "GET %s: the reply is larger than %zu bytes", url, sk.max);
    else if (cc == CURLE_URL_MALFORMAT || cc == CURLE_UNSUPPORTED_PROTOCOL)
        ret = gs_error_set(err, GS_EINVAL, "GET %s: %s", url, curl_easy_strerror(cc));
    else if (cc != CURLE_OK)
        ret = gs_error_set(err, GS_EIO, "GET %s: %s", url, curl_easy_strerror(cc));
    else if (st < 200 || st > 299)
        ret = gs_error_set(err, GS_EIO, "GET %s: HTTP %ld", url, st);
    else
        ret = 0;
    curl_easy_cleanup(h);
    return ret;
}
