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

/* A strategy that served nothing has no $ per useful GPU-hour (its cost buys no useful hour):
 * the tables print "-" there, and for its change against exclusive, instead of $0.00 / -100 %. */
static bool served(const struct gs_sim_result *r)
{
    return r->useful_gpu_hours > 0;
}

/* $ per useful GPU-hour and its change against base, or "-" where either served nothing */
static void cost_cells(const struct gs_sim_result *r, const struct gs_sim_result *base, char *usd,
                       size_t un, char *vs, size_t vn)
{
    snprintf(usd, un, served(r) ? "%.2f" : "-", r->cost_per_useful_hour);
    snprintf(vs, vn, served(r) && served(base) ? "%+.0f%%" : "-",
             rel(r->cost_per_useful_hour, base->cost_per_useful_hour));
}

/* rel, with changes that print as 0 % printed as +0 %, not -0 % */
static double rel0(double v, double base)
{
    double r = rel(v, base);
    return fabs(r) < 0.5 ? 0 : r;
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

/* ---- services: the autoscaler against a fixed replica count ---- */

static const char *fmt_lat(double s, char *b, size_t n)
{
    if (s < 1)
        snprintf(b, n, "%.0fms", s * 1000);
    else if (s < 10)
        snprintf(b, n, "%.2fs", s);
    else
        return fmt_wait(s, b, n);
    return b;
}

static double busy_pct(const struct gs_svc_stats *s)
{
    return s->gpu_hours > 0 ? 100.0 * s->used_gpu_hours / s->gpu_hours : 0;
}

static int pair(struct gs_buf *o, int width, const char *a, const char *b)
{
    char cell[64];
    snprintf(cell, sizeof(cell), "%s/%s", a, b);
    return gs_buf_printf(o, " %*s", width, cell);
}

static void rules_text(const struct gs_hpa_rules *r, bool up, char *b, size_t n)
{
    size_t o = 0;
    for (int i = 0; i < r->npolicies && o < n; i++)
        o += (size_t)snprintf(b + o, n - o, "%s%s%d%s/%ds",
                              i ? (r->select == GS_HPA_SELECT_MIN ? " min " : " max ") : "",
                              up ? "+" : "-", (int)r->policy[i].value,
                              r->policy[i].type == GS_HPA_POLICY_PERCENT ? "%" : " pods",
                              (int)r->policy[i].period_s);
    if (r->select == GS_HPA_SELECT_DISABLED)
        snprintf(b, n, "disabled");
}

static int svc_table(const struct gs_scenario *sc, const struct gs_sim_result *r, int n,
                     struct gs_buf *o)
{
    int rc = 0, tk = train_class(sc);
    for (int k = 0; k < r[0].nsvc; k++) {
        const struct gs_svc_stats *s0 = &r[0].svc[k];
        const struct gs_sc_service *sv = &sc->classes[s0->cls].service;
        const struct gs_hpa_spec *h = &sv->hpa;
        char up[96], down[96];
        rules_text(&h->up, true, up, sizeof(up));
        rules_text(&h->down, false, down, sizeof(down));
        if (!sv->autoscale || !r[0].fixed.ran) {
            rc |= gs_buf_printf(o, "\nservice %s: %d replicas (no autoscaler)",
                                sc->classes[s0->cls].name, (int)sv->replicas);
            for (int i = 0; i < n; i++)
                rc |= gs_buf_printf(o, "; %s p99 %.2fs, %.1f%% of requests over %.0fms",
                                    r[i].strategy->name, r[i].svc[k].latency_p99,
                                    r[i].svc[k].sla_miss_pct, 1000 * sv->latency_sla_s);
            rc |= gs_buf_puts(o, "\n");
            continue;
        }
        rc |= gs_buf_printf(o, "\nelastic scaling, service %s: HPA on", sc->classes[s0->cls].name);
        for (int m = 0; m < h->nmetrics; m++)
            rc |=
                gs_buf_printf(o, "%s %s %g", m ? "," : "", h->metric[m].name, h->metric[m].target);
        rc |=
            gs_buf_printf(o,
                          " (%d-%d replicas; up %s after %ds, down %s after %ds) against a "
                          "fixed %d replicas sized for the diurnal peak; request SLA %.0fms\n",
                          (int)h->min_replicas, (int)h->max_replicas, up, (int)h->up.window_s, down,
                          (int)h->down.window_s, (int)s0->fixed_replicas, 1000 * sv->latency_sla_s);
        rc |= gs_buf_printf(o, "%-26s %10s %10s %10s %11s %13s %10s %13s %11s\n", "strategy",
                            "replicas", "GPU-hours", "busy %", "service $", "request p99",
                            "SLA miss%", "training p50", "$/useful");
        rc |= gs_buf_printf(o, "%-26s %10s %10s %10s %11s %13s %10s %13s %11s\n", "", "HPA/fixed",
                            "HPA/fixed", "HPA/fixed", "HPA/fixed", "HPA/fixed", "HPA/fixed",
                            "HPA/fixed", "HPA/fixed");
        for (int i = 0; i < n; i++) {
            const struct gs_svc_stats *a = &r[i].svc[k], *b = &r[i].fixed.svc[k];
            char x[32], y[32];
            rc |= gs_buf_printf(o, "%-26s", r[i].strategy->label);
            snprintf(x, sizeof(x), "%.1f", a->replicas_mean);
            snprintf(y, sizeof(y), "%.0f", b->replicas_mean);
            rc |= pair(o, 10, x, y);
            snprintf(x, sizeof(x), "%.0f", a->gpu_hours);
            snprintf(y, sizeof(y), "%.0f", b->gpu_hours);
            rc |= pair(o, 10, x, y);
            snprintf(x, sizeof(x), "%.0f", busy_pct(a));
            snprintf(y, sizeof(y), "%.0f", busy_pct(b));
            rc |= pair(o, 10, x, y);
            snprintf(x, sizeof(x), "%.0f", a->cost);
            snprintf(y, sizeof(y), "%.0f", b->cost);
            rc |= pair(o, 11, x, y);
            char l1[16], l2[16];
            rc |= pair(o, 13, fmt_lat(a->latency_p99, l1, sizeof(l1)),
                       fmt_lat(b->latency_p99, l2, sizeof(l2)));
            snprintf(x, sizeof(x), "%.1f", a->sla_miss_pct);
            snprintf(y, sizeof(y), "%.1f", b->sla_miss_pct);
            rc |= pair(o, 10, x, y);
            rc |= pair(o, 13, fmt_wait(tk >= 0 ? r[i].cls[tk].wait_p50 : 0, l1, sizeof(l1)),
                       fmt_wait(r[i].fixed.train_p50_wait, l2, sizeof(l2)));
            snprintf(x, sizeof(x), "%.2f", r[i].cost_per_useful_hour);
            snprintf(y, sizeof(y), "%.2f", r[i].fixed.cost_per_useful_hour);
            rc |= pair(o, 11, x, y);
            rc |= gs_buf_puts(o, "\n");
        }
        const struct gs_sim_result *last = &r[n - 1];
        char l1[16], l2[16];
        rc |= gs_buf_printf(
            o,
            "the article states elastic scaling adds +10%% utilization / -10%% cost; measured "
            "(%s, HPA vs fixed): the service's GPUs busy %.0f%% vs %.0f%%, its GPU-hours and $ "
            "%+.0f%%, requests over the SLA %.1f%% vs %.1f%% (p99 %s vs %s); %d scale-ups, %d "
            "scale-downs, %d replicas at most; cluster used share %+.0f%%, $ per useful "
            "GPU-hour %+.0f%%\n",
            last->strategy->label, busy_pct(&last->svc[k]), busy_pct(&last->fixed.svc[k]),
            rel0(last->svc[k].cost, last->fixed.svc[k].cost), last->svc[k].sla_miss_pct,
            last->fixed.svc[k].sla_miss_pct, fmt_lat(last->svc[k].latency_p99, l1, sizeof(l1)),
            fmt_lat(last->fixed.svc[k].latency_p99, l2, sizeof(l2)), last->svc[k].scale_ups,
            last->svc[k].scale_downs, last->svc[k].replicas_max,
            rel0(last->used_share, last->fixed.used_share),
            rel0(last->cost_per_useful_hour, last->fixed.cost_per_useful_hour));
    }
    return rc;
}

/* Where idle GPU goes: per strategy, the unallocated GPU-hours by cause (sim/idle.h). */
static int idle_table(const struct gs_sim_result *r, int n, struct gs_buf *o)
{
    int rc = gs_buf_puts(o, "\nwhere idle GPU goes (GPU-hours left unallocated in the measured "
                            "window, by cause; docs/simulator.md defines them)\n");
    rc |= gs_buf_printf(o, "%-26s %8s", "strategy", "idle");
    for (int k = 0; k < GS_IDLE_CAUSES; k++)
        rc |= gs_buf_printf(o, " %13s", gs_idle_cause_name(k));
    rc |= gs_buf_puts(o, "\n");
    for (int i = 0; i < n; i++) {
        rc |= gs_buf_printf(o, "%-26s %8.1f", r[i].strategy->label, r[i].idle_gpu_hours);
        for (int k = 0; k < GS_IDLE_CAUSES; k++)
            rc |= gs_buf_printf(o, " %13.1f", r[i].idle_by_cause[k]);
        rc |= gs_buf_puts(o, "\n");
    }
    return rc;
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
    bool idle = false;
    for (int i = 0; i < n; i++) {
        char w1[16], w2[16], usd[24], vs[24];
        double tw = tk >= 0 ? r[i].cls[tk].wait_p50 : 0;
        cost_cells(&r[i], &r[0], usd, sizeof(usd), vs, sizeof(vs));
        idle |= !served(&r[i]);
        rc |= gs_buf_printf(o, "%-26s %6.1f %6.1f %6.1f %9s %7.1f%% %9s %4d %9s %+8.0f%% %9s\n",
                            r[i].strategy->label, 100 * r[i].alloc_share, 100 * r[i].used_share,
                            r[i].alloc_share > 0 ? 100 * r[i].used_share / r[i].alloc_share : 0,
                            fmt_wait(r[i].online_p99_wait, w1, sizeof(w1)),
                            r[i].online_sla_miss_pct, fmt_wait(tw, w2, sizeof(w2)), r[i].oom_kills,
                            usd, rel(r[i].used_share, r[0].used_share), vs);
    }
    if (idle)
        rc |= gs_buf_printf(o, "$/useful GPU-hour \"-\": the strategy served nothing, so its cost "
                               "bought no useful GPU-hour to price\n");
    for (int i = 0; i < n; i++)
        if (strcmp(r[i].strategy->name, "all") == 0)
            rc |= gs_buf_printf(o,
                                "\n%s: dynamic MIG (the cycle re-carves MIG GPUs for what is "
                                "pending) + priority and preemption + time-slicing/MPS on the GPUs "
                                "left whole + the HPA on services",
                                r[i].strategy->label);
    rc |= gs_buf_printf(o, "\nthe article states (utilization gain / cost saving):");
    for (int i = 1; i < n; i++)
        if (r[i].strategy->claim_util > 0)
            rc |= gs_buf_printf(o, " %s +%.0f%%/-%.0f%%;", r[i].strategy->name,
                                r[i].strategy->claim_util, r[i].strategy->claim_cost);
    rc |= gs_buf_printf(o, "\nmeasured here (used share / $ per useful GPU-hour vs exclusive):");
    for (int i = 1; i < n; i++) {
        char usd[24], vs[24];
        cost_cells(&r[i], &r[0], usd, sizeof(usd), vs, sizeof(vs));
        rc |= gs_buf_printf(o, " %s %+.0f%%/%s;", r[i].strategy->name,
                            rel(r[i].used_share, r[0].used_share), vs);
    }
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
    rc |= idle_table(r, n, o);
    rc |= svc_table(sc, r, n, o);
    return rc ? GS_ENOMEM : 0;
}

static json_t *svc_json(const struct gs_scenario *sc, const struct gs_svc_stats *s, int nsvc)
{
    json_t *arr = json_array();
    for (int k = 0; k < nsvc; k++) {
        json_t *v = json_object();
        json_object_set_new(v, "class", json_string(sc->classes[s[k].cls].name));
        json_object_set_new(v, "requests", json_real(s[k].requests));
        json_object_set_new(v, "sla_miss_pct", json_real(s[k].sla_miss_pct));
        json_object_set_new(v, "latency_p50_s", json_real(s[k].latency_p50));
        json_object_set_new(v, "latency_p99_s", json_real(s[k].latency_p99));
        json_object_set_new(v, "gpu_hours", json_real(s[k].gpu_hours));
        json_object_set_new(v, "busy_gpu_hours", json_real(s[k].used_gpu_hours));
        json_object_set_new(v, "cost_usd", json_real(s[k].cost));
        json_object_set_new(v, "replicas_mean", json_real(s[k].replicas_mean));
        json_object_set_new(v, "replicas_max", json_integer(s[k].replicas_max));
        json_object_set_new(v, "scale_ups", json_integer(s[k].scale_ups));
        json_object_set_new(v, "scale_downs", json_integer(s[k].scale_downs));
        json_object_set_new(v, "fixed_replicas", json_integer(s[k].fixed_replicas));
        json_array_append_new(arr, v);
    }
    return arr;
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
        /* null where the strategy served nothing: no useful GPU-hour to price */
        json_object_set_new(s, "usd_per_useful_gpu_hour",
                            served(&r[i]) ? json_real(r[i].cost_per_useful_hour) : json_null());
        json_object_set_new(s, "online_p99_wait_s", json_real(r[i].online_p99_wait));
        json_object_set_new(s, "online_sla_miss_pct", json_real(r[i].online_sla_miss_pct));
        json_object_set_new(s, "oom_kills", json_integer(r[i].oom_kills));
        json_object_set_new(s, "jobs_completed", json_integer(r[i].jobs_completed));
        if (r[i].strategy->recarve)
            json_object_set_new(s, "mig_recarves", json_integer(r[i].recarves));
        json_object_set_new(s, "idle_gpu_hours", json_real(r[i].idle_gpu_hours));
        json_t *idle = json_object();
        for (int k = 0; k < GS_IDLE_CAUSES; k++)
            json_object_set_new(idle, gs_idle_cause_key(k), json_real(r[i].idle_by_cause[k]));
        json_object_set_new(s, "idle_gpu_hours_by_cause", idle);
        json_object_set_new(s, "used_share_vs_exclusive_pct",
                            json_real(rel(r[i].used_share, r[0].used_share)));
        json_object_set_new(
            s, "cost_per_useful_vs_exclusive_pct",
            served(&r[i]) && served(&r[0])
                ? json_real(rel(r[i].cost_per_useful_hour, r[0].cost_per_useful_hour))
                : json_null());
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
        if (r[i].nsvc > 0)
            json_object_set_new(s, "services", svc_json(sc, r[i].svc, r[i].nsvc));
        if (r[i].fixed.ran) {
            const struct gs_sim_fixed *f = &r[i].fixed;
            json_t *fx = json_object();
            json_object_set_new(fx, "allocated_share", json_real(f->alloc_share));
            json_object_set_new(fx, "used_share", json_real(f->used_share));
            json_object_set_new(fx, "gpu_hours", json_real(f->gpu_hours));
            json_object_set_new(fx, "cost_usd", json_real(f->cost));
            json_object_set_new(fx, "useful_gpu_hours", json_real(f->useful_gpu_hours));
            json_object_set_new(fx, "usd_per_useful_gpu_hour", json_real(f->cost_per_useful_hour));
            json_object_set_new(fx, "online_p99_wait_s", json_real(f->online_p99_wait));
            json_object_set_new(fx, "online_sla_miss_pct", json_real(f->online_sla_miss_pct));
            json_object_set_new(fx, "training_p50_wait_s", json_real(f->train_p50_wait));
            json_object_set_new(fx, "jobs_completed", json_integer(f->jobs_completed));
            json_object_set_new(fx, "services", svc_json(sc, f->svc, r[i].nsvc));
            json_object_set_new(s, "fixed_replicas", fx);
        }
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

int gs_report_html_escape(struct gs_buf *o, const char *s)
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
        rc |= gs_report_html_escape(o, sc->tenants[q].name);
        rc |= gs_buf_puts(o, "</text>\n");
    }
    rc |= gs_buf_printf(o,
                        "<text x=\"%d\" y=\"%d\" font-size=\"10\">simulated time: 0 .. %.0f h"
                        "</text></svg></figure>\n",
                        pad, h + 34, tmax / 3600);
    return rc;
}

/* Each service: the autoscaler against the fixed count per strategy, and its replicas over
 * time under every strategy. */
static int svc_html(const struct gs_scenario *sc, const struct gs_sim_result *r, int n,
                    struct gs_buf *o)
{
    int rc = 0, tk = train_class(sc);
    for (int k = 0; k < r[0].nsvc; k++) {
        const struct gs_svc_stats *s0 = &r[0].svc[k];
        const struct gs_sc_service *sv = &sc->classes[s0->cls].service;
        bool cmp = r[0].fixed.ran && sv->autoscale;
        rc |= gs_buf_puts(o, "<h2>Service ");
        rc |= gs_report_html_escape(o, sc->classes[s0->cls].name);
        rc |= gs_buf_printf(o,
                            "%s</h2>\n<table><tr><th>strategy</th><th>replicas (mean)</th>"
                            "<th>GPU-hours</th><th>busy %%</th><th>$</th><th>request p99 (s)"
                            "</th><th>requests over %.0f ms %%</th><th>training p50 wait (s)"
                            "</th></tr>\n",
                            cmp ? ": HPA / fixed replicas" : "", 1000 * sv->latency_sla_s);
        for (int i = 0; i < n; i++) {
            const struct gs_svc_stats *a = &r[i].svc[k], *b = &r[i].fixed.svc[k];
            double tw = tk >= 0 ? r[i].cls[tk].wait_p50 : 0;
            if (cmp)
                rc |= gs_buf_printf(o,
                                    "<tr><td>%s</td><td>%.1f / %.0f</td><td>%.0f / %.0f</td>"
                                    "<td>%.0f / %.0f</td><td>%.0f / %.0f</td><td>%.2f / %.2f"
                                    "</td><td>%.1f / %.1f</td><td>%.0f / %.0f</td></tr>\n",
                                    r[i].strategy->label, a->replicas_mean, b->replicas_mean,
                                    a->gpu_hours, b->gpu_hours, busy_pct(a), busy_pct(b), a->cost,
                                    b->cost, a->latency_p99, b->latency_p99, a->sla_miss_pct,
                                    b->sla_miss_pct, tw, r[i].fixed.train_p50_wait);
            else
                rc |= gs_buf_printf(o,
                                    "<tr><td>%s</td><td>%.1f</td><td>%.0f</td><td>%.0f</td>"
                                    "<td>%.0f</td><td>%.2f</td><td>%.1f</td><td>%.0f</td></tr>\n",
                                    r[i].strategy->label, a->replicas_mean, a->gpu_hours,
                                    busy_pct(a), a->cost, a->latency_p99, a->sla_miss_pct, tw);
        }
        rc |= gs_buf_puts(o, "</table>\n");
        /* replicas over time */
        double ymax = cmp ? s0->fixed_replicas : 1;
        for (int i = 0; i < n; i++)
            for (int x = 0; x < GS_SIM_SAMPLES; x++)
                ymax = fmax(ymax, r[i].svc[k].replicas_ts[x]);
        int w = 720, h = 240, pad = 40;
        double tmax = r[0].t[GS_SIM_SAMPLES - 1] > 0 ? r[0].t[GS_SIM_SAMPLES - 1] : 1;
        rc |= gs_buf_printf(o,
                            "<figure><figcaption>Replicas over time%s</figcaption><svg "
                            "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"replicas\">\n"
                            "<rect x=\"%d\" y=\"10\" width=\"%d\" height=\"%d\" "
                            "fill=\"none\" stroke=\"#ccc\"/>\n"
                            "<text x=\"0\" y=\"18\" font-size=\"10\">%.0f</text>\n",
                            cmp ? " (dashed: the fixed count)" : "", w + 200, h + 40, pad, w, h,
                            ymax);
        if (cmp)
            rc |= gs_buf_printf(o,
                                "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
                                "stroke=\"#333\" stroke-dasharray=\"6 4\"/>\n",
                                pad, pad + w, 10 + h - s0->fixed_replicas / ymax * h,
                                10 + h - s0->fixed_replicas / ymax * h);
        for (int i = 0; i < n; i++) {
            rc |= gs_buf_printf(o,
                                "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                                "points=\"",
                                colors[i % 6]);
            for (int x = 0; x < GS_SIM_SAMPLES; x++)
                rc |= gs_buf_printf(o, "%.1f,%.1f ", pad + r[i].t[x] / tmax * w,
                                    10 + h - r[i].svc[k].replicas_ts[x] / ymax * h);
            rc |= gs_buf_printf(o,
                                "\"/><text x=\"%d\" y=\"%d\" font-size=\"11\" "
                                "fill=\"%s\">%s</text>\n",
                                pad + w + 8, 20 + i * 16, colors[i % 6], r[i].strategy->label);
        }
        rc |= gs_buf_printf(o,
                            "<text x=\"%d\" y=\"%d\" font-size=\"10\">simulated time: 0 .. "
                            "%.0f h</text></svg></figure>\n",
                            pad, h + 34, tmax / 3600);
    }
    return rc;
}

int gs_report_html(const struct gs_scenario *sc, const struct gs_sim_result *r, int n,
                   struct gs_buf *o)
{
    if (n <= 0)
        return 0;
    int rc = gs_buf_puts(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                            "<title>gpusched simulation: ");
    rc |= gs_report_html_escape(o, sc->name);
    rc |=
        gs_buf_puts(o, "</title><style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
                       "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;"
                       "text-align:right}th{background:#f4f4f4}td:first-child{text-align:left}"
                       "figure{margin:1.5em 0}figcaption{font-weight:bold;margin-bottom:.4em}"
                       "</style></head><body>\n<h1>gpusched simulation: ");
    rc |= gs_report_html_escape(o, sc->name);
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
        char claim[64] = "", usd[40], vs[24];
        cost_cells(&r[i], &r[0], usd, sizeof(usd), vs, sizeof(vs));
        if (!served(&r[i]))
            snprintf(usd, sizeof(usd), "- (served nothing)");
        if (r[i].strategy->claim_util > 0)
            snprintf(claim, sizeof(claim), "+%.0f%% util, -%.0f%% cost", r[i].strategy->claim_util,
                     r[i].strategy->claim_cost);
        rc |= gs_buf_printf(o,
                            "<tr><td>%s</td><td>%.1f</td><td>%.1f</td><td>%.0f</td><td>%.1f</td>"
                            "<td>%d</td><td>%.0f</td><td>%.0f</td><td>%s</td><td>%+.0f%%</td>"
                            "<td>%s</td></tr>\n",
                            r[i].strategy->label, 100 * r[i].alloc_share, 100 * r[i].used_share,
                            r[i].online_p99_wait, r[i].online_sla_miss_pct, r[i].oom_kills,
                            r[i].gpu_hours, r[i].cost, usd, rel(r[i].used_share, r[0].used_share),
                            claim);
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
    rc |= svc_html(sc, r, n, o);
    rc |= gs_buf_puts(o, "<h2>Waiting time per workload class (p50 / p95 / p99, seconds)</h2>"
                         "<table><tr><th>class</th>");
    for (int i = 0; i < n; i++)
        rc |= gs_buf_printf(o, "<th>%s</th>", r[i].strategy->label);
    rc |= gs_buf_puts(o, "</tr>\n");
    for (int k = 0; k < r[0].nclasses; k++) {
        rc |= gs_buf_puts(o, "<tr><td>");
        rc |= gs_report_html_escape(o, sc->nclasses ? sc->classes[k].name : "trace");
        rc |= gs_buf_puts(o, "</td>");
        for (int i = 0; i < n; i++)
            rc |= gs_buf_printf(o, "<td>%.0f / %.0f / %.0f</td>", r[i].cls[k].wait_p50,
                                r[i].cls[k].wait_p95, r[i].cls[k].wait_p99);
        rc |= gs_buf_puts(o, "</tr>\n");
    }
    rc |= gs_buf_puts(o, "</table>\n<h2>Text summary</h2><pre>");
    rc |= gs_report_html_escape(o, t.data ? t.data : "");
    rc |= gs_buf_puts(o, "</pre>\n<p>The article's figures are its author's claims; the "
                         "measured figures come from this run and change with the scenario."
                         "</p></body></html>\n");
    gs_buf_release(&t);
    return rc ? GS_ENOMEM : 0;
}
