/* kube/httpd: the daemons' HTTP server, driven over loopback sockets with small limits — whole
 * requests reach the handler, bodies past the bound get 413 (declared or chunked), a handler
 * out of memory gets 503, a handler that blocks or an address that holds many connections
 * holds up no one else, and idle connections are closed. */
#include "base/error.h"
#include "kube/httpd.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open, in_slow;

/* /echo answers the method and body; /slow waits for the gate; /oom and /bug fail; else ok */
static int handler(void *user, const struct gs_httpd_request *req, struct gs_httpd_reply *rep)
{
    (void)user;
    if (strcmp(req->url, "/echo") == 0) {
        rep->type = "application/json";
        return gs_buf_printf(&rep->body, "%s %zu %s", req->method, req->len, req->body) ? GS_ENOMEM
                                                                                        : 0;
    }
    if (strcmp(req->url, "/slow") == 0) {
        pthread_mutex_lock(&gate_mu);
        in_slow = true;
        pthread_cond_broadcast(&gate_cv);
        while (!gate_open)
            pthread_cond_wait(&gate_cv, &gate_mu);
        pthread_mutex_unlock(&gate_mu);
    }
    if (strcmp(req->url, "/oom") == 0)
        return GS_ENOMEM;
    if (strcmp(req->url, "/bug") == 0)
        return GS_EINTERNAL;
    return gs_httpd_reply(rep, 200, "text/plain", "ok\n");
}

static struct gs_httpd *start(int conns, int per_ip, int timeout_s, size_t max_body)
{
    struct gs_httpd_opts o = {.name = "test",
                              .bind = "127.0.0.1",
                              .max_conns = conns,
                              .max_conns_per_ip = per_ip,
                              .timeout_s = timeout_s,
                              .max_body = max_body};
    struct gs_httpd *h = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_httpd_start(&o, handler, NULL, &h, &err), 0, "%s", err.msg);
    cr_assert_gt(gs_httpd_port(h), 0);
    return h;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A connection from address from (127.0.0.x) to the server; -1 when refused. */
static int dial(const struct gs_httpd *h, const char *from)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, from, &a.sin_addr);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0, "bind %s: %s", from,
                 strerror(errno));
    struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons((uint16_t)gs_httpd_port(h))};
    inet_pton(AF_INET, "127.0.0.1", &s.sin_addr);
    if (connect(fd, (struct sockaddr *)&s, sizeof(s)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void say(int fd, const char *text)
{
    size_t n = strlen(text);
    cr_assert_eq(send(fd, text, n, MSG_NOSIGNAL), (ssize_t)n, "send: %s", strerror(errno));
}

/* Read until the server closes or a whole response with its body is in, for at most
 * timeout_s; returns the bytes read (NUL-terminated in buf), or -1 when nothing came. */
static int hear(int fd, char *buf, size_t size, double timeout_s)
{
    size_t n = 0;
    double t0 = now_s();
    buf[0] = '\0';
    while (n + 1 < size && now_s() - t0 < timeout_s) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t got = recv(fd, buf + n, size - 1 - n, 0);
        if (got <= 0)
            break;
        n += (size_t)got;
        buf[n] = '\0';
        const char *end = strstr(buf, "\r\n\r\n"), *cl = strcasestr(buf, "Content-Length:");
        if (end && cl && n >= (size_t)(end + 4 - buf) + strtoul(cl + 15, NULL, 10))
            break;
    }
    return n ? (int)n : -1;
}

/* True when the server closed fd within timeout_s (EOF or reset). */
static bool closed_within(int fd, double timeout_s)
{
    double t0 = now_s();
    char b[256];
    while (now_s() - t0 < timeout_s) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        if (recv(fd, b, sizeof(b), 0) <= 0)
            return true;
    }
    return false;
}

static int status_of(const char *resp)
{
    return strncmp(resp, "HTTP/1.1 ", 9) == 0 ? (int)strtol(resp + 9, NULL, 10) : -1;
}

/* One request on a fresh connection from 127.0.0.1; returns the status, fills resp. */
static int request(const struct gs_httpd *h, const char *raw, char *resp, size_t size)
{
    int fd = dial(h, "127.0.0.1");
    cr_assert_geq(fd, 0, "connect refused");
    say(fd, raw);
    hear(fd, resp, size, 5);
    close(fd);
    return status_of(resp);
}

Test(httpd, a_whole_request_reaches_the_handler)
{
    struct gs_httpd *h = start(0, 0, 0, 1024);
    char r[4096];
    cr_expect_eq(request(h, "POST /echo?x=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
                         r, sizeof(r)),
                 200, "%s", r);
    cr_expect(strstr(r, "\r\n\r\nPOST 5 hello") != NULL, "%s", r);
    cr_expect(strcasestr(r, "Content-Type: application/json") != NULL, "%s", r);
    cr_expect_eq(request(h, "GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", r, sizeof(r)), 200, "%s", r);
    cr_expect(strstr(r, "\r\n\r\nGET 0 ") != NULL, "%s", r);
    gs_httpd_stop(h);
}

Test(httpd, a_declared_body_over_the_limit_gets_413_before_it_is_sent)
{
    struct gs_httpd *h = start(0, 0, 0, 1024);
    char r[4096];
    /* the headers alone: the answer comes without a byte of the body */
    cr_expect_eq(
        request(h, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1025\r\n\r\n", r, sizeof(r)),
        413, "%s", r);
    cr_expect(strstr(r, "request body over the limit of 1024 bytes") != NULL, "%s", r);
    cr_expect_eq(request(h,
                         "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: "
                         "99999999999999999999999\r\n\r\n",
                         r, sizeof(r)),
                 413, "%s", r);
    gs_httpd_stop(h);
}

Test(httpd, a_chunked_body_over_the_limit_gets_413)
{
    struct gs_httpd *h = start(0, 0, 0, 1024);
    int fd = dial(h, "127.0.0.1");
    cr_assert_geq(fd, 0);
    say(fd, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    char chunk[5 + 512 + 2];
    memcpy(chunk, "200\r\n", 5); /* 0x200 = 512 bytes */
    memset(chunk + 5, 'a', 512);
    memcpy(chunk + 5 + 512, "\r\n", 2);
    for (int k = 0; k < 3; k++) /* 1536 bytes in all */
        cr_assert_eq(send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL), (ssize_t)sizeof(chunk));
    say(fd, "0\r\n\r\n");
    char r[4096];
    hear(fd, r, sizeof(r), 5);
    close(fd);
    cr_expect_eq(status_of(r), 413, "%s", r);
    /* one within the limit still passes */
    cr_expect_eq(request(h,
                         "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "3\r\nabc\r\n0\r\n\r\n",
                         r, sizeof(r)),
                 200, "%s", r);
    cr_expect(strstr(r, "POST 3 abc") != NULL, "%s", r);
    gs_httpd_stop(h);
}

Test(httpd, a_handler_out_of_memory_answers_503_and_a_bug_500)
{
    struct gs_httpd *h = start(0, 0, 0, 0);
    char r[4096];
    cr_expect_eq(request(h, "GET /oom HTTP/1.1\r\nHost: t\r\n\r\n", r, sizeof(r)), 503, "%s", r);
    cr_expect(strstr(r, "out of memory") != NULL, "%s", r);
    cr_expect_eq(request(h, "GET /bug HTTP/1.1\r\nHost: t\r\n\r\n", r, sizeof(r)), 500, "%s", r);
    cr_expect_eq(request(h, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n", r, sizeof(r)), 200, "%s",
                 r);
    gs_httpd_stop(h);
}

Test(httpd, a_blocked_handler_holds_up_no_other_connection)
{
    struct gs_httpd *h = start(0, 0, 0, 0);
    gate_open = in_slow = false;
    int slow = dial(h, "127.0.0.1");
    cr_assert_geq(slow, 0);
    say(slow, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
    pthread_mutex_lock(&gate_mu);
    while (!in_slow)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    /* while /slow waits (an extender bind on a slow API server), /healthz answers */
    int fd = dial(h, "127.0.0.1");
    cr_assert_geq(fd, 0);
    say(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    char r[4096];
    hear(fd, r, sizeof(r), 3);
    close(fd);
    cr_expect_eq(status_of(r), 200, "/healthz while a handler blocks: '%s'", r);
    pthread_mutex_lock(&gate_mu);
    gate_open = true;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    hear(slow, r, sizeof(r), 5);
    cr_expect_eq(status_of(r), 200, "%s", r);
    close(slow);
    gs_httpd_stop(h);
}

Test(httpd, idle_and_dribbling_connections_are_closed_after_the_timeout)
{
    struct gs_httpd *h = start(0, 0, 1, 0);
    int idle = dial(h, "127.0.0.1"), half = dial(h, "127.0.0.1");
    cr_assert(idle >= 0 && half >= 0);
    say(half, "GET /healthz HTTP/1.1\r\nHo");
    cr_expect(closed_within(idle, 5), "a connection that sent nothing is still open after 5 s");
    cr_expect(closed_within(half, 5), "a connection that stopped mid-header is still open");
    close(idle);
    close(half);
    gs_httpd_stop(h);
}

Test(httpd, one_address_cannot_take_every_connection)
{
    struct gs_httpd *h = start(16, 4, 30, 0);
    int fds[12], kept = 0;
    for (int i = 0; i < 12; i++) {
        fds[i] = dial(h, "127.0.0.2");
        if (fds[i] >= 0)
            say(fds[i], "GET /healthz HTTP/1.1\r\n");
    }
    /* the server closes what passes the per-address limit at once, and keeps the rest */
    bool closed[12] = {false};
    int nclosed = 0;
    for (double t0 = now_s(); nclosed < 8 && now_s() - t0 < 5;)
        for (int i = 0; i < 12; i++)
            if (!closed[i] && (fds[i] < 0 || closed_within(fds[i], 0.02))) {
                closed[i] = true;
                nclosed++;
            }
    for (int i = 0; i < 12; i++)
        kept += !closed[i] && !closed_within(fds[i], 0.1);
    cr_expect_eq(kept, 4, "127.0.0.2 kept %d connections, want 4", kept);
    char r[4096];
    cr_expect_eq(request(h, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n", r, sizeof(r)), 200,
                 "/healthz from another address: '%s'", r);
    for (int i = 0; i < 12; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    gs_httpd_stop(h);
}

Test(httpd, a_bad_bind_address_is_refused_with_its_value)
{
    struct gs_httpd_opts o = {.name = "test", .bind = "localhost:80", .port = 0};
    struct gs_httpd *h = NULL;
    struct gs_error err;
    gs_error_init(&err);
    cr_expect_eq(gs_httpd_start(&o, handler, NULL, &h, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "'localhost:80'") != NULL, "%s", err.msg);
    cr_expect_null(h);
}
