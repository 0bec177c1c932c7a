/* kpod.c - what one pod asks of its placement (struct gs_kpod, its arena) and how each of its
 * terms matches: label selectors on pods and namespaces, node selector terms on nodes. The
 * placed pods' index (kstate.c) and the per-pod precomputation (kprep.c) build on these
 * predicates; formats/podspec fills the pods. */
#include "kpod.h"

#include "../base/arena.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void gs_kpod_init(struct gs_kpod *p)
{
    memset(p, 0, sizeof(*p));
    gs_labels_init(&p->labels);
}

void gs_kpod_release(struct gs_kpod *p)
{
    gs_arena_release(&p->arena);
    gs_labels_release(&p->labels);
    memset(p, 0, sizeof(*p));
}

void *gs_kpod_alloc(struct gs_kpod *p, size_t n)
{
    return gs_arena_alloc(&p->arena, n);
}

char *gs_kpod_strdup(struct gs_kpod *p, const char *s)
{
    return gs_arena_strdup(&p->arena, s);
}

/* ---- matching ---- */

bool gs_kreq_parse_num(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    const char *d = s + (*s == '+' || *s == '-');
    if (!*d)
        return false;
    for (const char *q = d; *q; q++)
        if (*q < '0' || *q > '9')
            return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static bool has_val(const struct gs_kreq *r, const char *v)
{
    for (uint32_t i = 0; i < r->nvals; i++)
        if (strcmp(r->vals[i], v) == 0)
            return true;
    return false;
}

bool gs_kop_matches(enum gs_kop op, bool in, int64_t num, const char *v)
{
    int64_t x;
    switch (op) {
    case GS_KOP_IN:
        return v && in;
    case GS_KOP_NOTIN:
        return !v || !in;
    case GS_KOP_EXISTS:
        return v != NULL;
    case GS_KOP_DOESNOTEXIST:
        return v == NULL;
    case GS_KOP_GT:
        return v && gs_kreq_parse_num(v, &x) && x > num;
    case GS_KOP_LT:
        return v && gs_kreq_parse_num(v, &x) && x < num;
    }
    return false;
}

/* One requirement against a label's value (NULL: the label is absent). */
static bool req_matches(const struct gs_kreq *r, const char *v)
{
    bool in = (r->op == GS_KOP_IN || r->op == GS_KOP_NOTIN) && v && has_val(r, v);
    return gs_kop_matches((enum gs_kop)r->op, in, r->num, v);
}

bool gs_ksel_matches(const struct gs_ksel *s, const struct gs_labels *l)
{
    if (s->nothing)
        return false;
    for (uint32_t i = 0; i < s->nreqs; i++)
        if (!req_matches(&s->reqs[i], gs_labels_get(l, s->reqs[i].key)))
            return false;
    return true;
}

bool gs_knode_term_matches(const struct gs_knode_term *t, const struct gs_node *n)
{
    if (t->nexprs == 0 && t->nfields == 0)
        return false;
    for (uint32_t i = 0; i < t->nexprs; i++)
        if (!req_matches(&t->exprs[i], gs_labels_get(&n->labels, t->exprs[i].key)))
            return false;
    for (uint32_t i = 0; i < t->nfields; i++) {
        const char *v = strcmp(t->fields[i].key, "metadata.name") == 0 ? n->name : NULL;
        if (!req_matches(&t->fields[i], v))
            return false;
    }
    return true;
}

bool gs_kpod_node_matches(const struct gs_kpod *p, const struct gs_node *n)
{
    for (uint32_t i = 0; i < p->nnode_selector; i++) {
        const char *v = gs_labels_get(&n->labels, p->node_selector[i].key);
        if (!v || strcmp(v, p->node_selector[i].val) != 0)
            return false;
    }
    if (!p->has_required)
        return true;
    for (uint32_t i = 0; i < p->nrequired; i++)
        if (gs_knode_term_matches(&p->required[i], n))
            return true;
    return false;
}

bool gs_kaff_ns_matches(const struct gs_kaff_term *t, const char *ns)
{
    for (uint32_t i = 0; i < t->nns; i++)
        if (strcmp(t->ns[i], ns) == 0)
            return true;
    if (t->ns_sel.nothing)
        return false;
    /* the namespace's labels as far as they are known: kubernetes.io/metadata.name */
    for (uint32_t i = 0; i < t->ns_sel.nreqs; i++) {
        const struct gs_kreq *r = &t->ns_sel.reqs[i];
        if (!req_matches(r, strcmp(r->key, GS_KNS_NAME_KEY) == 0 ? ns : NULL))
            return false;
    }
    return true;
}

bool gs_kaff_term_matches(const struct gs_kaff_term *t, const struct gs_kpod *target)
{
    return gs_kaff_ns_matches(t, target->ns ? target->ns : "") &&
           gs_ksel_matches(&t->sel, &target->labels);
}
