/* labelsel.h - Kubernetes label selectors ({matchLabels, matchExpressions}, as
 * metav1.LabelSelector), read from the API server's JSON and matched against any object's
 * labels. Used by the tenancy objects (PDBs, MigManagers), PersistentVolumeClaims' spec.selector
 * and CSIStorageCapacity's nodeTopology. Plain data, no heap. */
#ifndef GS_LABELSEL_H
#define GS_LABELSEL_H

#include "../core/cluster.h"

#include <jansson.h>

#include <stdbool.h>
#include <stdint.h>

#define GS_SEL_MAX_VALS 4

enum gs_sel_op { GS_SEL_IN = 0, GS_SEL_NOTIN, GS_SEL_EXISTS, GS_SEL_NOTEXISTS };

struct gs_sel_req {
    char key[GS_LABEL_KEY_MAX];
    uint8_t op;
    uint8_t nval;
    char val[GS_SEL_MAX_VALS][GS_LABEL_VAL_MAX];
};

struct gs_error;

/* The selector sel (NULL or JSON null: empty) at field path into out[0..max): matchLabels
 * become In requirements of one value. Bounded: more than max requirements, GS_SEL_MAX_VALS
 * values, or keys and values too long are GS_EINVAL naming who and the field path, as is an
 * unknown operator. An empty selector (nout 0) matches everything. */
int gs_labelsel_read(const json_t *sel, struct gs_sel_req *out, int max, int *nout, const char *who,
                     const char *path, struct gs_error *err);

/* The value of label key on an object, or NULL. */
typedef const char *(*gs_label_fn)(const void *obj, const char *key);

/* Whether every requirement of sel[0..n) holds on obj's labels. */
bool gs_labelsel_matches(const struct gs_sel_req *sel, int n, gs_label_fn label, const void *obj);

#endif
