/* monitorcfg.h - the article's gpu-monitor-config: the gpu-metrics.json it carries, read from
 * the JSON itself or from the ConfigMap manifest as the article ships it.
 *
 *   {"metrics": ["gpu_utilization", ...],      which series to export (absent: all)
 *    "scrape_interval": "15s",                 how often to read the GPUs
 *    "labels": {"cluster": "production", ...}} added to every series
 *
 * Unknown fields, metric names the caller does not export, label names that are not
 * Prometheus label names or that the caller sets itself, and empty or overlong values are
 * refused with "file:line: field: what was expected". */
#ifndef GS_MONITORCFG_H
#define GS_MONITORCFG_H

#define GS_MON_MAX_METRICS 32
#define GS_MON_MAX_LABELS  16

struct gs_error;

struct gs_monitor_config {
    int nmetrics; /* 0: every metric */
    char metrics[GS_MON_MAX_METRICS][48];
    double scrape_interval_s; /* 0: not set */
    int nlabels;
    char label_name[GS_MON_MAX_LABELS][64];
    char label_value[GS_MON_MAX_LABELS][128];
};

/* known: the metric names the caller exports; reserved: label names the caller sets itself;
 * both NULL-terminated. Returns 0, GS_EINVAL (out untouched) or GS_EIO. */
int gs_monitor_config_load(const char *path, const char *const *known, const char *const *reserved,
                           struct gs_monitor_config *out, struct gs_error *err);

#endif
