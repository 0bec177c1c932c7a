/* report.c - text, JSON and HTML views of the strategy comparison that `gpusched sim`
 * prints; the HTML draws its charts as inline SVG so the file works offline. */
#include "report.h"

#include "../base/error.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double rel(double v, double base)
{
    return base > 0 ? (v / base - 1.0) * 100.0 : 0;
}

static const char *fmt_wait(double s, char *b, size_t n)
{
    if (s < 60)
        snprintf(b, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(b, n, "%.1fm", s / 60);
    else
        snprintf(b, n, "%.1fh", s / 3600);
    return b;
}

static int train_class(const struct gs_scenario *sc)
{
    for (int k = 0; k < sc->nclasses; k++)
        if (sc->classes[k].kind == GS_KIND_TRAINING)
            return k;
    return -1;
}

int gs_report_table(const struct gs_scenario *sc, const struct gs_sim_result *r, int n,
                    struct gs_buf *o)
{
    if (n <= 0)
        return 0;
    int tk = train_class(sc);
    int rc = gs_buf_printf(o,
                           "scenario '%s': %d GPUs, seed %llu, %.0fh simulated (%.0fh measured "
                           "after warm-up)\n\n",
                           sc->name, r[0].gpus, (unsigned long long)r[0].seed,
                           r[0].sim_seconds / 3600, (r[0].sim_seconds - sc->warmup_s) / 3600);
    rc |= gs_buf_printf(o, "%-26s %6s %6s %6s %9s %8s %9s %4s %9s %9s %9s\n", "strategy", "alloc",
                        "used", "used/", "online", "online", "training", "OOM", "$/useful",
                        "util vs", "cost vs");
    rc |=
        gs_buf_printf(o, "%-26s %6s %6s %6s %9s %8s %9s %4s %9s %9s %9s\n", "", "%", "%", "alloc%",
                      "p99 wait", "SLA miss", "p50 wait", "", "GPU-hour", "exclusive", "exclusive");
    for (int i = 0; i < n; i++) {
        char w1[16], w2[16];
        double tw = tk >= 0 ? r[i].cls[tk].wait_p50 : 0;
        rc |= gs_buf_printf(o,
                            "%-26s %6.1f %6.1f %6.1f %9s %7.1f%% %9s %4d %9.2f %+8.0f%% %+8.0f%%\n",
                            r[i].strategy->label, 100 * r[i].alloc_share, 100 * r[i].used_share,
                            r[i].alloc_share > 0 ? 100 * r[i].used_share / r[i].alloc_share : 0,
                            fmt_wait(r[i].online_p99_wait, w1, sizeof(w1)),
                            r[i].online_sla_miss_pct, fmt_wait(tw, w2, sizeof(w2)), r[i].oom_kills,
                            r[i].cost_per_useful_hour, rel(r[i].used_share, r[0].used_share),
                            rel(r[i].cost_per_useful_hour, r[0].cost_per_useful_hour));
    }
    rc |= gs_buf_printf(o, "\nthe article states (utilization gain / cost saving):");
    for (int i = 1; i < n; i++)
        if (r[i].strategy->claim_util > 0)
            rc |= gs_buf_printf(o, " %s +%.0f%%/-%.0f%%;", r[i].strategy->name,
                                r[i].strategy->claim_util, r[i].strategy->claim_cost);
    rc |= gs_buf_printf(o, "\nmeasured here (used share / $ per useful GPU-hour vs exclusive):");
    for (int i = 1; i < n; i++)
        rc |= gs_buf_printf(o, " %s %+.0f%%/%+.0f%%;", r[i].strategy->name,
                            rel(r[i].used_share, r[0].used_share),
                            rel(r[i].cost_per_useful_hour, r[0].cost_per_useful_hour));
    rc |= gs_buf_printf(o,
                        "\nthe article states priority scheduling adds +15%% utilization; measured "
                        "MIG + priority vs static MIG: %+.0f%% used, online p99 wait %.0fs -> "
                        "%.0fs\n",
                        n > 4 ? rel(r[4].used_share, r[3].used_share) : 0.0,
                        n > 4 ? r[3].online_p99_wait : 0.0, n > 4 ? r[4].online_p99_wait : 0.0);
    /* tenancy: queues with deserved shares, preemption, gangs */
    for (int i = 0; i < n; i++) {
        if (r[i].nteams == 0)
            continue;
        rc |= gs_buf_printf(o,
                            "\ntenancy, %s: online p99 wait %.1fs (goal < 30s: %s), allocation "
                            "%.1f%% (goal >= 80%%: %s); %d preemptions evicted %d pods, %.1f "
                            "GPU-hours lost; mean share of all GPUs:",
                            r[i].strategy->label, r[i].online_p99_wait,
                            r[i].online_p99_wait < 30 ? "met" : "missed", 100 * r[i].alloc_share,
                            r[i].alloc_share >= 0.8 ? "met" : "missed", r[i].preemptions,
                            r[i].victims, r[i].lost_gpu_hours);
        for (int q = 0; q < r[i].nteams && q < sc->ntenants; q++)
            rc |= gs_buf_printf(o, " %s %.1f%%", sc->tenants[q].name, 100 * r[i].team_mean[q]);
        if (r[i].strategy->recarve)
            rc |= gs_buf_printf(o, "; %d MIG re-carves", r[i].recarves);
        rc |= gs_buf_puts(o, "\n");
    }
    for (int i = 0; i < n; i++)
        if (r[i].strategy->recarve && r[i].nteams == 0)
            rc |= gs_buf_printf(o, "\n%s: %d MIG re-carves\n", r[i].strategy->label, r[i].recarves);
    return rc ? GS_ENOMEM : 0;
}

int gs_report_json(const struct gs_scenario *sc, const struct gs_sim_result *r, int n,
                   struct gs_buf *o)
{
    json_t *root = json_object();
    json_object_set_new(root, "scenario", json_string(sc->name));
    json_object_set_new(root, "seed", json_integer((json_int_t)sc->seed));
    json_object_set_new(root, "gpus", json_integer(n ? r[0].gpus : 0));
    json_object_set_new(root, "duration_s", json_real(sc->duration_s));
    json_object_set_new(root, "warmup_s", json_real(sc->warmup_s));
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        json_t *s = json_object();
        json_object_set_new(s, "strategy", json_string(r[i].strategy->name));
        json_object_set_new(s, "label", json_string(r[i].strategy->label));
        json_object_set_new(s, "allocated_share", json_real(r[i].alloc_share));
        json_object_set_new(s, "used_share", json_real(r[i].used_share));
        json_object_set_new(s, "gpu_hours", json_real(r[i].gpu_hours));
        json_object_set_new(s, "cost_usd", json_real(r[i].cost));
        json_object_set_new(s, "useful_gpu_hours", json_real(r[i].useful_gpu_hours));
        json_object_set_new(s, "usd_per_useful_gpu_hour", json_real(r[i].cost_per_useful_hour));
        json_object_set_new(s, "online_p99_wait_s", json_real(r[i].online_p99_wait));
        json_object_set_new(s, "online_sla_miss_pct", json_real(r[i].online_sla_miss_pct));
        json_object_set_new(s, "oom_kills", json_integer(r[i].oom_kills));
        json_object_set_new(s, "jobs_completed", json_integer(r[i].jobs_completed));
        if (r[i].strategy->recarve)
            json_object_set_new(s, "mig_recarves", json_integer(r[i].recarves));
        json_object_set_new(s, "used_share_vs_exclusive_pct",
                            json_real(rel(r[i].used_share, r[0].used_share)));
        json_object_set_new(s, "cost_per_useful_vs_exclusive_pct",
                            json_real(rel(r[i].cost_per_useful_hour, r[0].cost_per_useful_hour)));
        if (r[i].strategy->claim_util > 0) {
            json_object_set_new(s, "article_util_gain_pct", json_real(r[i].strategy->claim_util));
            json_object_set_new(s, "article_cost_saving_pct", json_real(r[i].strategy->claim_cost));
        }
        json_t *cls = json_array();
        for (int k = 0; k < r[i].nclasses; k++) {
            const struct gs_class_stats *c = &r[i].cls[k];
            json_t *co = json_object();
            json_object_set_new(co, "class",
                                json_string(sc->nclasses ? sc->classes[k].name : "trace"));
            json_object_set_new(co, "arrived", json_integer(c->arrived));
            json_object_set_new(co, "started", json_integer(c->started));
            json_object_set_new(co, "completed", json_integer(c->completed));
            json_object_set_new(co, "waiting_at_end", json_integer(c->waiting_at_end));
            json_object_set_new(co, "wait_p50_s", json_real(c->wait_p50));
            json_object_set_new(co, "wait_p95_s", json_real(c->wait_p95));
            json_object_set_new(co, "wait_p99_s", json_real(c->wait_p99));
            json_object_set_new(co, "sla_miss", json_integer(c->sla_miss));
            json_object_set_new(co, "oom_kills", json_integer(c->oom_kills));
            json_array_append_new(cls, co);
        }
        json_object_set_new(s, "classes", cls);
        if (r[i].nteams > 0) {
            json_t *ten = json_object(), *teams = json_array();
            json_object_set_new(ten, "preemptions", json_integer(r[i].preemptions));
            json_object_set_new(ten, "victims", json_integer(r[i].victims));
            json_object_set_new(ten, "lost_gpu_hours", json_real(r[i].lost_gpu_hours));
            for (int q = 0; q < r[i].nteams && q < sc->ntenants; q++) {
                json_t *tq = json_object(), *ts = json_array();
                json_object_set_new(tq, "team", json_string(sc->tenants[q].name));
                json_object_set_new(tq, "mean_share", json_real(r[i].team_mean[q]));
                for (int k = 0; k < GS_SIM_SAMPLES; k++)
                    json_array_append_new(ts, json_real(r[i].team_ts[q][k]));
                json_object_set_new(tq, "share_over_time", ts);
                json_array_append_new(teams, tq);
            }
            json_object_set_new(ten, "teams", teams);
            json_object_set_new(s, "tenancy", ten);
        }
        json_array_append_new(arr, s);
    }
    json_object_set_new(root, "strategies", arr);
    char *text = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
    json_decref(root);
    if (!text)
        return GS_ENOMEM;
    int rc = gs_buf_puts(o, text);
    rc |= gs_buf_puts(o, "\n");
    free(text);
    return rc ? GS_ENOMEM : 0;
}

static const char *colors[] = {"#7f7f7f", "#1f77b4", "#9467bd", "#2ca02c", "#ff7f0e", "#d62728"};

static int esc(struct gs_buf *o, const char *s)
{
    int rc = 0;
    for (; *s && !rc; s++) {
        switch (*s) {
        case '<':
            rc = gs_buf_puts(o, "&lt;");
            break;
        case '>':
            rc = gs_buf_puts(o, "&gt;");
            break;
        case '&':
            rc = gs_buf_puts(o, "&amp;");
            break;
        case '"':
            rc = gs_buf_puts(o, "&quot;");
            break;
        default:
            rc = gs_buf_append(o, s, 1);
        }
    }
    return rc;
}

/* horizontal bar chart: one bar per strategy */
static int bars(struct gs_buf *o, const char *title, const struct gs_sim_result *r, int n,
                const double *v, const char *unit, const double *claims)
{
    double mx = 0;
    for (int i = 0; i < n; i++)
        mx = fmax(mx, v[i]);
    if (mx <= 0)
        mx = 1;
    int w = 520, rowh = 26, h = n * rowh + 30;
    int rc = gs_buf_printf(o,
                           "<figure><figcaption>%s</figcaption><svg width=\"%d\" height=\"%d\" "
                           "role=\"img\" aria-label=\"%s\">\n",
                           title, w + 260, h, title);
    for (int i = 0; i < n; i++) {
        double bw = v[i] / mx * w;
        int y = 10 + i * rowh;
        rc |= gs_buf_printf(o,
                            "<text x=\"0\" y=\"%d\" font-size=\"12\">%s</text>"
                            "<rect x=\"170\" y=\"%d\" width=\"%.1f\" height=\"18\" fill=\"%s\"/>"
                            "<text x=\"%.1f\" y=\"%d\" font-size=\"12\">%.2f%s</text>\n",
                            y + 13, r[i].strategy->label, y, bw * 0.85, colors[i % 6],
                            175 + bw * 0.85, y + 13, v[i], unit);
        if (claims && claims[i] != 0)
            rc |= gs_buf_printf(o,
                                "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#555\">"
                                "(article: %+.0f%%)</text>\n",
                                260 + bw * 0.85, y + 13, claims[i]);
    }
    rc |= gs_buf_puts(o, "</svg></figure>\n");
    return rc;
}

static int lines(struct gs_buf *o, const char *title, const struct gs_sim_result *r, int n,
                 bool used)
{
    int w = 720, h = 240, pad = 40;
    double tmax = r[0].t[GS_SIM_SAMPLES - 1] > 0 ? r[0].t[GS_SIM_SAMPLES - 1] : 1;
    int rc = gs_buf_printf(o,
                           "<figure><figcaption>%s</figcaption><svg width=\"%d\" height=\"%d\" "
                           "role=\"img\" aria-label=\"%s\">\n"
                           "<rect x=\"%d\" y=\"10\" width=\"%d\" height=\"%d\" fill=\"none\" "
                           "stroke=\"#ccc\"/>\n",
                           title, w + 200, h + 40, title, pad, w, h);
    for (int g = 0; g <= 4; g++)
        rc |= gs_buf_printf(o,
                            "<text x=\"0\" y=\"%d\" font-size=\"10\">%d%%</text>"
                            "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#eee\"/>\n",
                            10 + h - g * h / 4 + 4, g * 25, pad, pad + w, 10 + h - g * h / 4,
                            10 + h - g * h / 4);
    for (int i = 0; i < n; i++) {
        rc |= gs_buf_printf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                            colors[i % 6]);
        for (int k = 0; k < GS_SIM_SAMPLES; k++) {
            double v = used ? r[i].used_ts[k] : r[i].alloc_ts[k];
            rc |= gs_buf_printf(o, "%.1f,%.1f ", pad + r[i].t[k] / tmax * w, 10 + h - v * h);
        }
        rc |=
            gs_buf_printf(o, "\"/><text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\">%s</text>\n",
                          pad + w + 8, 20 + i * 16, colors[i % 6], r[i].strategy->label);
    }
    rc |= gs_buf_printf(o,
                        "<text x=\"%d\" y=\"%d\" font-size=\"10\">simulated time: 0 .. %.0f h"
                        "</text></svg></figure>\n",
                        pad, h + 34, tmax / 3600);
    return rc;
}

/* Each team's share of all GPUs over time, under the last strategy that ran tenancy. */
static int team_lines(struct gs_buf *o, const struct gs_scenario *sc, const struct gs_sim_result *r,
                      int n)
{
    const struct gs_sim_result *x = NULL;
    for (int i = 0; i < n; i++)
        if (r[i].nteams > 0)
            x = &r[i];
    if (!x)
        return 0;
    int w = 720, h = 240, pad = 40;
    double tmax = x->t[GS_SIM_SAMPLES - 1] > 0 ? x->t[GS_SIM_SAMPLES - 1] : 1;
    int rc = gs_buf_printf(o,
                           "<figure><figcaption>Team shares of all GPUs over time (%s): %d "
                           "preemptions, %.1f GPU-hours lost</figcaption><svg width=\"%d\" "
                           "height=\"%d\" role=\"img\" aria-label=\"team shares\">\n"
                           "<rect x=\"%d\" y=\"10\" width=\"%d\" height=\"%d\" fill=\"none\" "
                           "stroke=\"#ccc\"/>\n",
                           x->strategy->label, x->preemptions, x->lost_gpu_hours, w + 200, h + 40,
                           pad, w, h);
    for (int q = 0; q < x->nteams && q < sc->ntenants; q++) {
        rc |= gs_buf_printf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                            colors[(q + 1) % 6]);
        for (int k = 0; k < GS_SIM_SAMPLES; k++)
            rc |= gs_buf_printf(o, "%.1f,%.1f ", pad + x->t[k] / tmax * w,
                                10 + h - x->team_ts[q][k] * h);
        rc |= gs_buf_printf(o, "\"/><text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\">",
                            pad + w + 8, 20 + q * 16, colors[(q + 1) % 6]);
        rc |= esc(o, sc->tenants[q].name);
        rc |= gs_buf_puts(o, "</text>\n");
    }
    rc |= gs_buf_printf(o,
                        "<text x=\"%d\" y=\"%d\" font-size=\"10\">simulated time: 0 .. %.0f h"
                        "</text></svg></figure>\n",
                        pad, h + 34, tmax / 3600);
    return rc;
}

int gs_report_html(const struct gs_scenario *sc, const struct gs_sim_result *r, int n,
                   struct gs_buf *o)
{
    if (n <= 0)
        return 0;
    int rc = gs_buf_puts(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                            "<title>gpusched simulation: ");
    rc |= esc(o, sc->name);
    rc |=
        gs_buf_puts(o, "</title><style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
                       "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;"
                       "text-align:right}th{background:#f4f4f4}td:first-child{text-align:left}"
                       "figure{margin:1.5em 0}figcaption{font-weight:bold;margin-bottom:.4em}"
                       "</style></head><body>\n<h1>gpusched simulation: ");
    rc |= esc(o, sc->name);
    rc |= gs_buf_printf(o,
                        "</h1>\n<p>%d GPUs, seed %llu, %.0f h simulated, measured after a %.0f h "
                        "warm-up. Every strategy runs the same arrivals through the same "
                        "engine (policy <code>gpusched</code>); only GPU sharing and queue "
                        "order change.</p>\n",
                        r[0].gpus, (unsigned long long)r[0].seed, r[0].sim_seconds / 3600,
                        sc->warmup_s / 3600);
    struct gs_buf t;
    gs_buf_init(&t, 0);
    rc |= gs_report_table(sc, r, n, &t);
    rc |= gs_buf_puts(o, "<table><tr><th>strategy</th><th>allocated %</th><th>used %</th>"
                         "<th>online p99 wait (s)</th><th>online SLA miss %</th><th>OOM kills</th>"
                         "<th>GPU-hours</th><th>cost $</th><th>$ per useful GPU-hour</th>"
                         "<th>used vs exclusive</th><th>article's claim</th></tr>\n");
    for (int i = 0; i < n; i++) {
        char claim[64] = "";
        if (r[i].strategy->claim_util > 0)
            snprintf(claim, sizeof(claim), "+%.0f%% util, -%.0f%% cost", r[i].strategy->claim_util,
                     r[i].strategy->claim_cost);
        rc |= gs_buf_printf(o,
                            "<tr><td>%s</td><td>%.1f</td><td>%.1f</td><td>%.0f</td><td>%.1f</td>"
                            "<td>%d</td><td>%.0f</td><td>%.0f</td><td>%.2f</td><td>%+.0f%%</td>"
                            "<td>%s</td></tr>\n",
                            r[i].strategy->label, 100 * r[i].alloc_share, 100 * r[i].used_share,
                            r[i].online_p99_wait, r[i].online_sla_miss_pct, r[i].oom_kills,
                            r[i].gpu_hours, r[i].cost, r[i].cost_per_useful_hour,
                            rel(r[i].used_share, r[0].used_share), claim);
    }
    rc |= gs_buf_puts(o, "</table>\n");
    double v[GS_SIM_STRATEGIES], cl[GS_SIM_STRATEGIES];
    for (int i = 0; i < n && i < GS_SIM_STRATEGIES; i++) {
        v[i] = 100 * r[i].used_share;
        cl[i] = r[i].strategy->claim_util;
    }
    rc |= bars(o, "Used share of GPUs (%), with the article's stated gain", r, n, v, "%", cl);
    for (int i = 0; i < n && i < GS_SIM_STRATEGIES; i++)
        v[i] = 100 * r[i].alloc_share;
    rc |= bars(o, "Allocated share of GPUs (%)", r, n, v, "%", NULL);
    for (int i = 0; i < n && i < GS_SIM_STRATEGIES; i++) {
        v[i] = r[i].cost_per_useful_hour;
        cl[i] = r[i].strategy->claim_cost > 0 ? -r[i].strategy->claim_cost : 0;
    }
    rc |= bars(o, "$ per useful GPU-hour (lower is better), with the article's stated saving", r, n,
               v, "", cl);
    for (int i = 0; i < n && i < GS_SIM_STRATEGIES; i++)
        v[i] = r[i].online_p99_wait;
    rc |= bars(o, "Online inference p99 wait (s)", r, n, v, " s", NULL);
    rc |= lines(o, "Used share of GPUs over time", r, n, true);
    rc |= lines(o, "Allocated share of GPUs over time", r, n, false);
    rc |= team_lines(o, sc, r, n);
    rc |= gs_buf_puts(o, "<h2>Waiting time per workload class (p50 / p95 / p99, seconds)</h2>"
                         "<table><tr><th>class</th>");
    for (int i = 0; i < n; i++)
        rc |= gs_buf_printf(o, "<th>%s</th>", r[i].strategy->label);
    rc |= gs_buf_puts(o, "</tr>\n");
    for (int k = 0; k < r[0].nclasses; k++) {
        rc |= gs_buf_puts(o, "<tr><td>");
        rc |= esc(o, sc->nclasses ? sc->classes[k].name : "trace");
        rc |= gs_buf_puts(o, "</td>");
        for (int i = 0; i < n; i++)
            rc |= gs_buf_printf(o, "<td>%.0f / %.0f / %.0f</td>", r[i].cls[k].wait_p50,
                                r[i].cls[k].wait_p95, r[i].cls[k].wait_p99);
        rc |= gs_buf_puts(o, "</tr>\n");
    }
    rc |= gs_buf_puts(o, "</table>\n<h2>Text summary</h2><pre>");
    rc |= esc(o, t.data ? t.data : "");
    rc |= gs_buf_puts(o, "</pre>\n<p>The article's figures are its author's claims; the "
                         "measured figures come from this run and change with the scenario."
                         "</p></body></html>\n");
    gs_buf_release(&t);
    return rc ? GS_ENOMEM : 0;
}
