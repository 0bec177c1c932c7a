/* kube/informer: list then watch against a scripted API server on loopback — items reach the
 * callbacks and the list's resourceVersion starts the watch, events and bookmarks move it on,
 * an ERROR event (410 Gone) lists again, a user's RELIST lists again, a 404 list is an absent
 * kind only when asked, a stop ends a watch that hangs — and the backoff schedule. */
#include "base/error.h"
#include "kube/informer.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---------- a scripted API server: one reply per connection, in order ---------- */

#define MAX_REPLIES 16

struct reply {
    int status;
    const char *body; /* NULL with hang: keep the connection open until the test ends */
    bool hang;
};

static struct server {
    int fd, port;
    pthread_t t;
    pthread_mutex_t mu;
    struct reply replies[MAX_REPLIES];
    int nreplies, next;
    char paths[MAX_REPLIES][512]; /* the request targets, in order */
    volatile int done;
} srv;

static void *serve(void *arg)
{
    (void)arg;
    while (!srv.done) {
        struct pollfd p = {srv.fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int c = accept(srv.fd, NULL, NULL);
        if (c < 0)
            continue;
        char req[4096] = "";
        size_t len = 0;
        while (len < sizeof(req) - 1 && !strstr(req, "\r\n\r\n")) {
            ssize_t r = read(c, req + len, sizeof(req) - 1 - len);
            if (r <= 0)
                break;
            len += (size_t)r;
            req[len] = '\0';
        }
        pthread_mutex_lock(&srv.mu);
        int i = srv.next < srv.nreplies ? srv.next++ : -1;
        if (i >= 0)
            sscanf(req, "GET %511s", srv.paths[i]);
        struct reply rep = i >= 0 ? srv.replies[i] : (struct reply){0, NULL, true};
        pthread_mutex_unlock(&srv.mu);
        if (!rep.hang || rep.body) {
            char head[256];
            const char *body = rep.body ? rep.body : "";
            int n = snprintf(head, sizeof(head),
                             "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                             "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                             rep.status, strlen(body));
            if (write(c, head, (size_t)n) < 0 || write(c, body, strlen(body)) < 0)
                rep.hang = false;
        }
        while (rep.hang && !srv.done) { /* a watch that sends nothing */
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        close(c);
    }
    return NULL;
}

static void server_start(const struct reply *replies, int n)
{
    memset(&srv, 0, sizeof(srv));
    pthread_mutex_init(&srv.mu, NULL);
    memcpy(srv.replies, replies, sizeof(*replies) * (size_t)n);
    srv.nreplies = n;
    srv.fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(srv.fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(srv.fd, 16), 0);
    socklen_t al = sizeof(a);
    getsockname(srv.fd, (struct sockaddr *)&a, &al);
    srv.port = ntohs(a.sin_port);
    pthread_create(&srv.t, NULL, serve, NULL);
}

static void server_stop(void)
{
    srv.done = 1;
    pthread_join(srv.t, NULL);
    close(srv.fd);
    pthread_mutex_destroy(&srv.mu);
}

static int served(void)
{
    pthread_mutex_lock(&srv.mu);
    int n = srv.next;
    pthread_mutex_unlock(&srv.mu);
    return n;
}

static struct gs_kube_client *client(void)
{
    struct gs_kube_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.server, sizeof(cfg.server), "http://127.0.0.1:%d", srv.port);
    struct gs_kube_client *kc = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_kube_client_new(&cfg, NULL, &kc, &err), 0, "%s", err.msg);
    return kc;
}

/* ---------- a user that writes down every callback ---------- */

struct log {
    pthread_mutex_t mu;
    char text[4096];
    int relist_on; /* an event whose object is named so answers GS_INFORMER_RELIST */
};

static void note(struct log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct log *l, const char *fmt, ...)
{
    pthread_mutex_lock(&l->mu);
    size_t o = strlen(l->text);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->text + o, sizeof(l->text) - o, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&l->mu);
}

static const char *name_of(const json_t *obj)
{
    const char *n = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    return n ? n : "?";
}

static void u_begin(void *user)
{
    note(user, "begin;");
}

static int u_item(const json_t *obj, void *user)
{
    note(user, "item %s;", name_of(obj));
    return 0;
}

static int u_end(const char *rv, int n, bool absent, void *user)
{
    if (absent)
        note(user, "absent %d;", n);
    else
        note(user, "end %s %d;", rv, n);
    return 0;
}

static int u_event(const char *type, const json_t *obj, void *user)
{
    struct log *l = user;
    note(l, "event %s %s;", type, name_of(obj));
    return strcmp(name_of(obj), "again") == 0 && l->relist_on ? GS_INFORMER_RELIST : 0;
}

static const struct gs_informer_ops ops = {u_begin, u_item, u_end, NULL, u_event};

static bool wait_for(int n_served, double seconds)
{
    for (int i = 0; i < (int)(seconds * 100); i++) {
        if (served() >= n_served)
            return true;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

#define LIST(rv, items)                                                                            \
    "{\"kind\":\"ThingList\",\"metadata\":{\"resourceVersion\":\"" rv "\"},\"items\":[" items "]}"
#define OBJ(name, rv) "{\"metadata\":{\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"}}"
#define EV(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"

Test(informer, lists_then_watches_from_the_lists_version_and_relists_on_410_gone)
{
    const struct reply replies[] = {
        {200, LIST("10", OBJ("a", "9") "," OBJ("b", "10")), false},
        {200, EV("ADDED", OBJ("c", "11")) EV("BOOKMARK", OBJ("", "12")), false},
        {200, EV("ERROR", "{\"kind\":\"Status\",\"code\":410,\"message\":\"too old\"}"), false},
        {200, LIST("20", OBJ("x", "20")), false},
        {0, NULL, true},
    };
    server_start(replies, 5);
    struct gs_kube_client *kc = client();
    struct log l = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct gs_informer_opts o = {.path = "/api/v1/things", .what = "things"};
    struct gs_informer *inf = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_informer_start(kc, &o, &ops, &l, &inf, &err), 0, "%s", err.msg);
    bool all = wait_for(5, 10);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    cr_assert(gs_informer_synced(inf));
    cr_assert_eq(gs_informer_lists(inf), 2, "lists %llu",
                 (unsigned long long)gs_informer_lists(inf));
    gs_informer_stop(inf); /* ends the hanging watch */
    gs_kube_client_free(kc);
    server_stop();
    cr_assert(all, "served %d requests of 5", srv.next);
    cr_assert_str_eq(l.text, "begin;item a;item b;end 10 2;event ADDED c;begin;item x;end 20 1;");
    /* the list, a watch from its version, one from the bookmark's, the list, a watch from it */
    cr_assert(strncmp(srv.paths[0], "/api/v1/things?limit=500", 24) == 0, "%s", srv.paths[0]);
    cr_assert(strstr(srv.paths[1], "watch=1") && strstr(srv.paths[1], "resourceVersion=10"), "%s",
              srv.paths[1]);
    cr_assert(strstr(srv.paths[2], "resourceVersion=12"), "%s", srv.paths[2]);
    cr_assert(strstr(srv.paths[3], "limit=500") && !strstr(srv.paths[3], "watch=1"), "%s",
              srv.paths[3]);
    cr_assert(strstr(srv.paths[4], "resourceVersion=20"), "%s", srv.paths[4]);
}

Test(informer, an_event_callback_that_answers_relist_lists_again)
{
    const struct reply replies[] = {
        {200, LIST("5", ""), false},
        {200, EV("MODIFIED", OBJ("again", "6")) EV("ADDED", OBJ("late", "7")), false},
        {200, LIST("8", OBJ("again", "6")), false},
        {0, NULL, true},
    };
    server_start(replies, 4);
    struct gs_kube_client *kc = client();
    struct log l = {.mu = PTHREAD_MUTEX_INITIALIZER, .relist_on = 1};
    struct gs_informer_opts o = {.path = "/apis/x/v1/things", .what = "things", .lane2 = true};
    struct gs_informer *inf = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_informer_start(kc, &o, &ops, &l, &inf, &err), 0, "%s", err.msg);
    bool all = wait_for(4, 10);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    gs_informer_stop(inf);
    gs_kube_client_free(kc);
    server_stop();
    cr_assert(all, "served %d requests of 4", srv.next);
    /* the event after the one that asked for a list is not delivered: the list has it */
    cr_assert_str_eq(l.text, "begin;end 5 0;event MODIFIED again;begin;item again;end 8 1;");
    cr_assert(strstr(srv.paths[3], "resourceVersion=8"), "%s", srv.paths[3]);
}

Test(informer, a_404_list_is_an_absent_kind_only_when_asked)
{
    const struct reply replies[] = {
        {404, "{\"kind\":\"Status\",\"message\":\"the server could not find the resource\"}",
         false},
        {404, "{\"kind\":\"Status\",\"message\":\"the server could not find the resource\"}",
         false},
    };
    server_start(replies, 2);
    struct gs_kube_client *kc = client();
    struct log l = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct gs_error err;
    gs_error_init(&err);
    struct gs_informer_opts o = {.path = "/apis/x/v1/crds", .what = "crds", .absent_retry_s = 1};
    int rc = gs_informer_list(kc, &o, &ops, &l, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    o.absent_retry_s = 0;
    rc = gs_informer_list(kc, &o, &ops, &l, &err);
    gs_kube_client_free(kc);
    server_stop();
    cr_assert_eq(rc, GS_ENOTFOUND, "rc %d", rc);
    cr_assert(strstr(err.msg, "404"), "%s", err.msg);
    cr_assert_str_eq(l.text, "begin;begin;absent 0;begin;");
}

Test(informer, backoff_doubles_to_its_bound_with_up_to_half_again_of_jitter)
{
    double b = 1;
    const double u[] = {0, 0.5, 0.999, 0, 0, 0, 0};
    const double want[] = {1, 2.5, 5.998, 8, 16, 30, 30};
    for (int i = 0; i < 7; i++) {
        double d = gs_informer_backoff(&b, 30, u[i]);
        cr_assert_float_eq(d, want[i], 1e-9, "step %d: delay %g, want %g", i, d, want[i]);
    }
}

Test(informer, a_list_whose_continue_token_expires_starts_over_without_duplicates)
{
    const struct reply replies[] = {
        /* page 1 with a continue token, then 410 on the token, then the whole list */
        {200,
         "{\"kind\":\"ThingList\",\"metadata\":{\"resourceVersion\":\"5\",\"continue\":\"tok\"},"
         "\"items\":[" OBJ("a", "4") "]}",
         false},
        {410, "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"expired\"}",
         false},
        {200, LIST("7", OBJ("a", "6") "," OBJ("b", "7")), false},
        {0, NULL, true},
    };
    server_start(replies, 4);
    struct gs_kube_client *kc = client();
    struct log l = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct gs_informer_opts o = {.path = "/api/v1/things", .what = "things"};
    struct gs_informer *inf = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_informer_start(kc, &o, &ops, &l, &inf, &err), 0, "%s", err.msg);
    bool all = wait_for(4, 10);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    gs_informer_stop(inf);
    gs_kube_client_free(kc);
    server_stop();
    cr_assert(all, "served %d requests of 4", srv.next);
    /* what the first page gave is dropped (a second begin) before the list starts over */
    cr_assert_str_eq(l.text, "begin;item a;begin;item a;item b;end 7 2;");
    cr_assert(strstr(srv.paths[1], "continue=tok"), "%s", srv.paths[1]);
}
