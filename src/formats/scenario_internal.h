/* scenario_internal.h - the scenario reader's parts (scenario.h), internal to them: scenario.c
 * (the top level, the table-driven walk and the shared value readers), scenario_cluster.c
 * (node groups), scenario_workload.c (classes and traces) and scenario_service.c (tenants
 * and services). Each part reads its keys with gs__sc_walk over a table of fields, one row
 * per key: unknown keys are errors, and every error cites file:line and the field path. */
#ifndef GS_SCENARIO_INTERNAL_H
#define GS_SCENARIO_INTERNAL_H

#include "scenario.h"
#include "yaml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One parse: the document, where errors go, and the scenario being filled (classes look up
 * the tenants read before them). */
struct gs__sc_ctx {
    struct gs_yaml y;
    struct gs_error *err;
    struct gs_scenario *sc;
};

/* A key's reader: the value v at path into obj. Returns 0 or GS_EINVAL with c->err set. */
typedef int (*gs__sc_field_fn)(struct gs__sc_ctx *c, struct fy_node *v, const char *path,
                               void *obj);

struct gs__sc_field {
    const char *key;
    gs__sc_field_fn fn;
    bool required;
};

#define GS__SC_NFIELDS(t) (sizeof(t) / sizeof((t)[0]))
#define SC(o)             ((struct gs_scenario *)(o))
#define CLS(o)            ((struct gs_sc_class *)(o))

/* Read mapping n at path into obj by the nf rows of fields (at most 32). */
int gs__sc_walk(struct gs__sc_ctx *c, struct fy_node *n, const char *path,
                const struct gs__sc_field *fields, size_t nf, void *obj);
/* A list of objects read by gs__sc_walk into base (stride bytes apart, at most max, *count
 * read), each initialised by init first, with a required name (char[GS_NAME_MAX] at
 * name_off) no other entry may share. */
int gs__sc_list(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *base, size_t stride,
                size_t name_off, int *count, int max, const struct gs__sc_field *f, size_t nf,
                void (*init)(void *));
/* A duration ("90s", "10m", "2h", "1d"), and a non-negative Kubernetes quantity: in milli
 * units (milli) or in whole units divided by mul_div. */
int gs__sc_duration(struct gs__sc_ctx *c, struct fy_node *v, const char *path, double *out);
int gs__sc_quantity(struct gs__sc_ctx *c, struct fy_node *v, const char *path, int64_t mul_div,
                    bool milli, int64_t *out);

/* The parts: node_groups (scenario_cluster.c), classes and trace (scenario_workload.c),
 * tenants and a class's service (scenario_service.c); obj is the scenario, for a service the
 * class. */
int gs__sc_groups(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o);
int gs__sc_classes(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o);
int gs__sc_trace(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o);
int gs__sc_tenants(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o);
int gs__sc_service(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o);

/* scenario_hpa.c: the rest of an autoscaling/v2 HorizontalPodAutoscaler around a service's
 * hpa spec. is_object: v is the whole object (it has spec, apiVersion or kind); _object reads
 * it, the spec by spec(c, node, path, o); _target reads spec.scaleTargetRef (checked, the
 * service is the target); _source checks metric entry (at path p) of a type other than Pods
 * (Resource, ContainerResource, Object, External) as the API server does and names it in out
 * ("Resource cpu", target 0): no simulated replica reports it, so the HPA finds it missing
 * (sim/deploy.c), as the Kubernetes HPA handles a metric it cannot fetch. */
bool gs__sc_hpa_is_object(struct fy_node *v);
int gs__sc_hpa_object(struct gs__sc_ctx *c, struct fy_node *v, const char *p, gs__sc_field_fn spec,
                      void *o);
int gs__sc_hpa_target(struct gs__sc_ctx *c, struct fy_node *v, const char *p, void *o);
int gs__sc_hpa_source(struct gs__sc_ctx *c, struct fy_node *entry, const char *p, const char *type,
                      struct gs_hpa_metric *out);

#endif
