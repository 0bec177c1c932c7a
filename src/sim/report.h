/* report.h - renderings of simulation results: a text table, JSON, and a self-contained
 * HTML report with inline SVG charts (no network, no scripts). Pure functions that append
 * to a caller's buffer; they return 0 or GS_ENOMEM. */
#ifndef GS_REPORT_H
#define GS_REPORT_H

#include "../base/buf.h"
#include "scenario.h"

int gs_report_table(const struct gs_scenario *sc, const struct gs_sim_result *r, int n,
                    struct gs_buf *out);
int gs_report_json(const struct gs_scenario *sc, const struct gs_sim_result *r, int n,
                   struct gs_buf *out);
int gs_report_html(const struct gs_scenario *sc, const struct gs_sim_result *r, int n,
                   struct gs_buf *out);

/* s with & < > " as HTML entities, appended to o. */
int gs_report_html_escape(struct gs_buf *o, const char *s);

#endif
