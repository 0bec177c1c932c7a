/* advise_report.c - renderings of an advice (sim/advise.h): text, JSON, HTML. */
#include "advise.h"
#include "build.h"
#include "report.h"

#include "../base/error.h"
#include "../core/catalog.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int group_mig_gpus(const struct gs_scenario *sc, const struct gs_adv_setup *s, int g)
{
    int n = 0;
    for (int k = 0; k < sc->groups[g].gpus && k < GS_MAX_GPUS_NODE; k++)
        n += s->g[g].mig[k];
    return n;
}

static void fmt_wait(double s, char *out, size_t size)
{
    if (s < 120)
        snprintf(out, size, "%.0fs", s);
    else if (s < 7200)
        snprintf(out, size, "%.1fm", s / 60);
    else
        snprintf(out, size, "%.1fh", s / 3600);
}

static int metrics_row(struct gs_buf *o, const char *label, const struct gs_adv_eval *e)
{
    char w[32];
    fmt_wait(e->r.online_p99_wait, w, sizeof(w));
    return gs_buf_printf(o, "%-22s %7.1f %7.1f %10s %9.1f%% %10.2f %s\n", label,
                         100 * e->r.alloc_share, 100 * e->r.used_share, w, e->r.online_sla_miss_pct,
                         e->r.cost_per_useful_hour, e->feasible ? "yes" : "no");
}

/* Whether class k's pods arrived under the recommended setup and none of them started: the
 * setup cannot place it. */
static bool unplaced(const struct gs_advice *a, int k)
{
    const struct gs_class_stats *c = &a->recommended.r.cls[k];
    return k < a->recommended.r.nclasses && c->arrived > 0 && c->started == 0;
}

/* Why class k cannot be placed, in words, where the cluster's shape says it. */
static void unplaced_why(const struct gs_advice *a, int k, char *out, size_t size)
{
    const struct gs_sc_class *c = &a->sc->classes[k];
    int most = 0;
    for (int g = 0; g < a->sc->ngroups; g++)
        if (a->sc->groups[g].gpus > most)
            most = a->sc->groups[g].gpus;
    /* the node groups its node_selector and node_affinity admit, and the most GPUs there */
    int admit = 0, most_admit = 0, len = 0;
    char groups[96] = "";
    for (int g = 0; (c->nnode_sel || c->nterms) && g < a->sc->ngroups; g++) {
        if (!gs_simbuild_group_admits(a->sc, k, g))
            continue;
        if (a->sc->groups[g].gpus > most_admit)
            most_admit = a->sc->groups[g].gpus;
        if (len < (int)sizeof(groups))
            len += snprintf(groups + len, sizeof(groups) - (size_t)len, "%s%s", admit ? ", " : "",
                            a->sc->groups[g].name);
        admit++;
    }
    if ((c->nnode_sel || c->nterms) && !admit)
        snprintf(out, size, "its node selector and affinity match no node group");
    else if (c->nnode_sel || c->nterms)
        snprintf(out, size,
                 "its node selector and affinity keep it to node group%s %s, where %s (%d GPUs "
                 "per node at most)",
                 admit == 1 ? "" : "s", groups,
                 c->gpus > most_admit ? "no node has GPUs enough" : "the setup leaves no room",
                 most_admit);
    else if (c->gpus > most)
        snprintf(out, size, "its pods ask %d GPUs each; no node has more than %d", c->gpus, most);
    else
        snprintf(out, size, "none of its %d pods started in the run",
                 a->recommended.r.cls[k].arrived);
}

int gs_advice_table(const struct gs_advice *a, struct gs_buf *o)
{
    const struct gs_scenario *sc = a->sc;
    int rc = gs_buf_printf(o,
                           "advice for scenario '%s': %d GPUs, seed %llu; %d setups simulated "
                           "(%d search passes), each on the same arrivals under gpusched's "
                           "scheduling\n\n",
                           sc->name, a->current.r.gpus, (unsigned long long)sc->seed,
                           a->simulations, a->passes);
    for (int g = 0; g < sc->ngroups; g++) {
        const struct gs_sc_group *grp = &sc->groups[g];
        char cur[256], rec[256];
        gs_adv_group_str(sc, &a->current.setup, g, cur, sizeof(cur));
        gs_adv_group_str(sc, &a->recommended.setup, g, rec, sizeof(rec));
        rc |= gs_buf_printf(o, "node group %s: %d node%s x %d %s\n", grp->name, grp->nodes,
                            grp->nodes == 1 ? "" : "s", grp->gpus,
                            grp->gpus ? gs_catalog_get(grp->model)->name : "(no GPUs)");
        rc |= gs_buf_printf(o, "  decision tree: %s\n", a->tree[g]);
        rc |= gs_buf_printf(o, "  current:       %s\n", cur);
        rc |= gs_buf_printf(o, "  recommended:   %s%s\n", rec,
                            strcmp(cur, rec) == 0 ? " (unchanged)" : "");
    }
    rc |= gs_buf_printf(
        o,
        "dynamic MIG (the scheduler re-carves MIG GPUs for what is pending, "
        "scheduler.dynamicMig in the chart): current %s, recommended %s%s\n",
        a->current.setup.dynamic_mig ? "on" : "off",
        a->recommended.setup.dynamic_mig ? "on" : "off",
        a->recommended.setup.dynamic_mig ? " (the layouts above are where each GPU starts)" : "");
    rc |= gs_buf_printf(o, "\n%-22s %7s %7s %10s %10s %10s %s\n", "setup", "alloc%", "used%",
                        "online p99", "online SLA", "$/useful", "SLA met");
    rc |=
        gs_buf_printf(o, "%-22s %7s %7s %10s %10s %10s\n", "", "", "", "wait", "miss", "GPU-hour");
    rc |= metrics_row(o, "current", &a->current);
    rc |= metrics_row(o, "decision tree's first", &a->seed);
    rc |= metrics_row(o, "recommended", &a->recommended);
    const struct gs_sim_result *c = &a->current.r, *r = &a->recommended.r;
    char ratio[32] = "n/a";
    if (c->used_share > 0)
        snprintf(ratio, sizeof(ratio), "x%.2f", r->used_share / c->used_share);
    rc |= gs_buf_printf(
        o,
        "\nrecommended vs current: used share %s (%.1f%% -> %.1f%%), allocated "
        "%+.1f points, $ per useful GPU-hour %.2f -> %.2f (%+.0f%%)\n",
        ratio, 100 * c->used_share, 100 * r->used_share, 100 * (r->alloc_share - c->alloc_share),
        c->cost_per_useful_hour, r->cost_per_useful_hour,
        c->cost_per_useful_hour > 0 ? 100 * (r->cost_per_useful_hour / c->cost_per_useful_hour - 1)
                                    : 0);
    for (int k = 0; k < sc->nclasses; k++) {
        if (!unplaced(a, k))
            continue;
        char why[256];
        unplaced_why(a, k, why, sizeof(why));
        rc |= gs_buf_printf(o, "the recommended setup cannot place class %s: %s\n",
                            sc->classes[k].name, why);
    }
    rc |= gs_buf_puts(o, "\nbest setups tried:\n");
    for (int i = 0; i < a->ntop; i++) {
        const struct gs_adv_eval *e = &a->top[i];
        rc |= gs_buf_printf(o, "  %d. used %.1f%%, alloc %.1f%%, online p99 wait %.0fs%s:", i + 1,
                            100 * e->r.used_share, 100 * e->r.alloc_share, e->r.online_p99_wait,
                            e->feasible ? "" : " (SLA missed)");
        for (int g = 0; g < sc->ngroups; g++) {
            char s[256];
            gs_adv_group_str(sc, &e->setup, g, s, sizeof(s));
            rc |= gs_buf_printf(o, "%s %s: %s", g ? ";" : "", sc->groups[g].name, s);
        }
        rc |= gs_buf_puts(o, e->setup.dynamic_mig ? "; dynamic MIG\n" : "\n");
    }
    return rc ? GS_ENOMEM : 0;
}

static json_t *metrics_json(const struct gs_adv_eval *e)
{
    json_t *m = json_object();
    json_object_set_new(m, "used_share", json_real(e->r.used_share));
    json_object_set_new(m, "allocated_share", json_real(e->r.alloc_share));
    json_object_set_new(m, "online_p99_wait_s", json_real(e->r.online_p99_wait));
    json_object_set_new(m, "online_sla_miss_pct", json_real(e->r.online_sla_miss_pct));
    json_object_set_new(m, "usd_per_useful_gpu_hour", json_real(e->r.cost_per_useful_hour));
    json_object_set_new(m, "gpu_hours", json_real(e->r.gpu_hours));
    json_object_set_new(m, "cost_usd", json_real(e->r.cost));
    json_object_set_new(m, "useful_gpu_hours", json_real(e->r.useful_gpu_hours));
    json_object_set_new(m, "jobs_completed", json_integer(e->r.jobs_completed));
    json_object_set_new(m, "preemptions", json_integer(e->r.preemptions));
    json_object_set_new(m, "sla_met", json_boolean(e->feasible));
    return m;
}

static json_t *group_setup_json(const struct gs_scenario *sc, const struct gs_adv_setup *s, int g)
{
    const struct gs_sc_group *grp = &sc->groups[g];
    const struct gs_adv_group *a = &s->g[g];
    json_t *j = json_object();
    char str[256];
    gs_adv_group_str(sc, s, g, str, sizeof(str));
    json_object_set_new(j, "summary", json_string(str));
    json_object_set_new(j, "sharing", json_string(gs_adv_sharing_name(a->sharing)));
    json_object_set_new(j, "replicas", json_integer(a->replicas));
    int nm = group_mig_gpus(sc, s, g);
    json_object_set_new(j, "mig_gpus", json_integer(nm));
    if (nm) {
        snprintf(str, sizeof(str), "gpusched-%.50s", grp->name);
        json_object_set_new(j, "mig_config", json_string(str));
    } else {
        json_object_set_new(j, "mig_config", json_null());
    }
    json_t *lay = json_array();
    for (int k = 0; k < grp->gpus && k < GS_MAX_GPUS_NODE; k++) {
        if (!a->mig[k]) {
            json_array_append_new(lay, json_string("whole"));
            continue;
        }
        gs_mig_layout_str(grp->model, &a->layout[k], str, sizeof(str));
        json_array_append_new(lay, json_string(str));
    }
    json_object_set_new(j, "layout", lay);
    return j;
}

static json_t *setup_json(const struct gs_scenario *sc, const struct gs_adv_eval *e)
{
    json_t *m = metrics_json(e);
    json_t *groups = json_array();
    for (int g = 0; g < sc->ngroups; g++) {
        json_t *j = group_setup_json(sc, &e->setup, g);
        json_object_set_new(j, "name", json_string(sc->groups[g].name));
        json_array_append_new(groups, j);
    }
    json_object_set_new(m, "node_groups", groups);
    json_object_set_new(m, "dynamic_mig", json_boolean(e->setup.dynamic_mig));
    return m;
}

int gs_advice_json(const struct gs_advice *a, const char *files_dir, struct gs_buf *out)
{
    const struct gs_scenario *sc = a->sc;
    json_t *root = json_object();
    json_object_set_new(root, "scenario", json_string(sc->name));
    json_object_set_new(root, "seed", json_integer((json_int_t)sc->seed));
    json_object_set_new(root, "gpus", json_integer(a->current.r.gpus));
    json_object_set_new(root, "simulations", json_integer(a->simulations));
    json_object_set_new(root, "search_passes", json_integer(a->passes));
    json_object_set_new(root, "sla_online_wait_s", json_real(sc->sla_wait_s));
    json_object_set_new(root, "current", setup_json(sc, &a->current));
    json_object_set_new(root, "decision_tree_setup", setup_json(sc, &a->seed));
    json_object_set_new(root, "recommended", setup_json(sc, &a->recommended));
    json_t *un = json_array();
    for (int k = 0; k < sc->nclasses; k++) {
        if (!unplaced(a, k))
            continue;
        char why[256];
        unplaced_why(a, k, why, sizeof(why));
        json_t *x = json_object();
        json_object_set_new(x, "class", json_string(sc->classes[k].name));
        json_object_set_new(x, "pods", json_integer(a->recommended.r.cls[k].arrived));
        json_object_set_new(x, "why", json_string(why));
        json_array_append_new(un, x);
    }
    json_object_set_new(root, "unplaced_classes", un);
    json_object_set_new(root, "used_share_ratio",
                        json_real(a->current.r.used_share > 0
                                      ? a->recommended.r.used_share / a->current.r.used_share
                                      : 0));
    json_t *groups = json_array();
    for (int g = 0; g < sc->ngroups; g++) {
        const struct gs_sc_group *grp = &sc->groups[g];
        json_t *j = group_setup_json(sc, &a->recommended.setup, g);
        json_object_set_new(j, "name", json_string(grp->name));
        json_object_set_new(j, "gpu",
                            json_string(grp->gpus ? gs_catalog_get(grp->model)->name : ""));
        json_object_set_new(j, "nodes", json_integer(grp->nodes));
        json_object_set_new(j, "gpus_per_node", json_integer(grp->gpus));
        json_object_set_new(j, "decision_tree", json_string(a->tree[g]));
        json_object_set_new(j, "decision_tree_pick", json_string(a->pick[g]));
        json_object_set_new(j, "current", group_setup_json(sc, &a->current.setup, g));
        if (files_dir) {
            char p[1024];
            snprintf(p, sizeof(p), "%s/device-plugin/%s.yaml", files_dir, grp->name);
            json_object_set_new(j, "device_plugin_config_file", json_string(p));
        }
        json_array_append_new(groups, j);
    }
    json_object_set_new(root, "node_groups", groups);
    json_t *top = json_array();
    for (int i = 0; i < a->ntop; i++)
        json_array_append_new(top, setup_json(sc, &a->top[i]));
    json_object_set_new(root, "best_setups", top);
    if (files_dir) {
        json_t *f = json_object();
        char p[1024];
        snprintf(p, sizeof(p), "%s/mig-parted-config.yaml", files_dir);
        json_object_set_new(f, "mig_parted_config", json_string(p));
        snprintf(p, sizeof(p), "%s/device-plugin-config.yaml", files_dir);
        json_object_set_new(f, "device_plugin_config", json_string(p));
        snprintf(p, sizeof(p), "%s/node-labels.sh", files_dir);
        json_object_set_new(f, "node_labels", json_string(p));
        json_object_set_new(root, "files", f);
    }
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    json_decref(root);
    if (!s)
        return GS_ENOMEM;
    int rc = gs_buf_puts(out, s);
    rc |= gs_buf_puts(out, "\n");
    free(s);
    return rc ? GS_ENOMEM : 0;
}

/* A bar chart of used and allocated share, current against recommended (inline SVG). */
static int bars(struct gs_buf *o, const struct gs_advice *a)
{
    const struct {
        const char *label;
        const struct gs_adv_eval *e;
    } rows[3] = {
        {"current", &a->current}, {"decision tree", &a->seed}, {"recommended", &a->recommended}};
    int rc = gs_buf_puts(o, "<svg width=\"640\" height=\"150\" role=\"img\" aria-label=\"used and "
                            "allocated share\">\n");
    for (int i = 0; i < 3; i++) {
        double y = 10 + i * 45;
        rc |= gs_buf_printf(o, "<text x=\"0\" y=\"%.0f\">%s</text>\n", y + 14, rows[i].label);
        rc |= gs_buf_printf(o,
                            "<rect x=\"120\" y=\"%.0f\" width=\"%.1f\" height=\"16\" "
                            "fill=\"#9ecae1\"/><text x=\"%.1f\" y=\"%.0f\">alloc %.1f%%</text>\n",
                            y, 400 * rows[i].e->r.alloc_share, 126 + 400 * rows[i].e->r.alloc_share,
                            y + 13, 100 * rows[i].e->r.alloc_share);
        rc |= gs_buf_printf(o,
                            "<rect x=\"120\" y=\"%.0f\" width=\"%.1f\" height=\"16\" "
                            "fill=\"#3182bd\"/><text x=\"%.1f\" y=\"%.0f\">used %.1f%%</text>\n",
                            y + 18, 400 * rows[i].e->r.used_share,
                            126 + 400 * rows[i].e->r.used_share, y + 31,
                            100 * rows[i].e->r.used_share);
    }
    return rc | gs_buf_puts(o, "</svg>\n");
}

int gs_advice_html(const struct gs_advice *a, struct gs_buf *o)
{
    const struct gs_scenario *sc = a->sc;
    int rc = gs_buf_puts(o, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>gpusched "
                            "advice: ");
    rc |= gs_report_html_escape(o, sc->name);
    rc |= gs_buf_puts(o, "</title><style>body{font-family:sans-serif;margin:2em;max-width:70em}"
                         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:"
                         "4px 8px;text-align:left}th{background:#f0f0f0}.tree{font-size:90%;"
                         "color:#444}</style></head><body>\n<h1>gpusched advice: ");
    rc |= gs_report_html_escape(o, sc->name);
    rc |= gs_buf_printf(o,
                        "</h1>\n<p>%d GPUs, seed %llu. %d setups simulated on the same arrivals "
                        "under gpusched's scheduling; a setup meets the SLA when online "
                        "inference's p99 wait is within %.0f s and at most 5 %% of online pods "
                        "miss it.</p>\n",
                        a->current.r.gpus, (unsigned long long)sc->seed, a->simulations,
                        sc->sla_wait_s);
    rc |= bars(o, a);
    rc |= gs_buf_puts(o, "<h2>Figures</h2>\n<table><tr><th>setup</th><th>allocated</th><th>used"
                         "</th><th>online p99 wait</th><th>online SLA miss</th><th>$ per useful "
                         "GPU-hour</th><th>SLA met</th></tr>\n");
    const struct {
        const char *label;
        const struct gs_adv_eval *e;
    } rows[3] = {{"current", &a->current},
                 {"decision tree's first", &a->seed},
                 {"recommended", &a->recommended}};
    for (int i = 0; i < 3; i++) {
        const struct gs_sim_result *r = &rows[i].e->r;
        rc |= gs_buf_printf(o,
                            "<tr><td>%s</td><td>%.1f %%</td><td>%.1f %%</td><td>%.0f s</td><td>"
                            "%.1f %%</td><td>%.2f</td><td>%s</td></tr>\n",
                            rows[i].label, 100 * r->alloc_share, 100 * r->used_share,
                            r->online_p99_wait, r->online_sla_miss_pct, r->cost_per_useful_hour,
                            rows[i].e->feasible ? "yes" : "no");
    }
    rc |= gs_buf_puts(o, "</table>\n<h2>Node groups</h2>\n<table><tr><th>group</th><th>GPUs</th>"
                         "<th>decision tree</th><th>current</th><th>recommended</th></tr>\n");
    for (int g = 0; g < sc->ngroups; g++) {
        const struct gs_sc_group *grp = &sc->groups[g];
        char cur[256], rec[256];
        gs_adv_group_str(sc, &a->current.setup, g, cur, sizeof(cur));
        gs_adv_group_str(sc, &a->recommended.setup, g, rec, sizeof(rec));
        rc |= gs_buf_puts(o, "<tr><td>");
        rc |= gs_report_html_escape(o, grp->name);
        rc |= gs_buf_printf(o, "</td><td>%d x %d %s</td><td class=\"tree\">", grp->nodes, grp->gpus,
                            grp->gpus ? gs_catalog_get(grp->model)->name : "");
        rc |= gs_report_html_escape(o, a->tree[g]);
        rc |= gs_buf_puts(o, "</td><td>");
        rc |= gs_report_html_escape(o, cur);
        rc |= gs_buf_puts(o, "</td><td><b>");
        rc |= gs_report_html_escape(o, rec);
        rc |= gs_buf_puts(o, "</b></td></tr>\n");
    }
    rc |= gs_buf_puts(o, "</table>\n<h2>Recommended configs</h2>\n<p>mig-parted (apply with "
                         "NVIDIA's mig-manager, node label <code>nvidia.com/mig.config</code>):"
                         "</p>\n<pre>");
    struct gs_buf y;
    gs_buf_init(&y, 0);
    rc |= gs_adv_migparted(sc, &a->recommended.setup, &y);
    rc |= gs_report_html_escape(o, y.len ? y.data : "(no group uses MIG)\n");
    rc |= gs_buf_puts(o, "</pre>\n");
    for (int g = 0; g < sc->ngroups && !rc; g++) {
        gs_buf_reset(&y);
        rc |= gs_adv_dpconfig(sc, &a->recommended.setup, g, &y);
        rc |= gs_buf_puts(o, "<p>device plugin, node group ");
        rc |= gs_report_html_escape(o, sc->groups[g].name);
        rc |= gs_buf_puts(o, ":</p>\n<pre>");
        rc |= gs_report_html_escape(o, y.data ? y.data : "");
        rc |= gs_buf_puts(o, "</pre>\n");
    }
    gs_buf_release(&y);
    rc |= gs_buf_puts(o, "</body></html>\n");
    return rc ? GS_ENOMEM : 0;
}
