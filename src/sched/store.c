/* store.c - the scheduler's store of Nodes and Pods (sched/store.h): the informers write it
 * (sched/scheduler.c), the binder and the extender assume binds in it, and every scheduling
 * cycle copies it into a snapshot (sched/snapshot.c). Node changes are read once here through
 * sched/cache.c, to say once per change of a Node why its GPUs are unusable. */
#include "store.h"

#include "../base/buf.h"
#include "../base/error.h"
#include "../base/log.h"
#include "cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gs__store_init(struct gs_store *st, const struct gs_migparted *mp)
{
    memset(st, 0, sizeof(*st));
    st->mp = mp;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
}

void gs__store_release(struct gs_store *st)
{
    for (int i = 0; i < st->nnodes; i++)
        gs_kube_node_release(&st->nodes[i]);
    free(st->nodes);
    json_decref(st->node_events);
    for (int i = 0; i < st->npods; i++)
        gs_kube_pod_release(&st->pods[i].p);
    free(st->pods);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
}

int gs__store_find_node(const struct gs_store *s, const char *name)
{
    for (int i = 0; i < s->nnodes; i++)
        if (strcmp(s->nodes[i].name, name) == 0)
            return i;
    return -1;
}

int gs__store_find_pod(const struct gs_store *s, const char *ns, const char *name)
{
    for (int i = 0; i < s->npods; i++)
        if (strcmp(s->pods[i].p.name, name) == 0 && strcmp(s->pods[i].p.ns, ns) == 0)
            return i;
    return -1;
}

/* Why a node offers no GPUs (or no new pods), said once per change of the Node object: the
 * store sees each version once, a snapshot sees it every cycle. */
static void report_node(struct gs_store *st, const struct gs_kube_node *old,
                        const struct gs_kube_node *n)
{
    const struct gs_migparted *mp = st->mp;
    if (old && strcmp(old->rv, n->rv) == 0)
        return;
    struct gs_cluster one;
    gs_cluster_init(&one);
    char note[256] = "", was[256] = "";
    gs_cache_add_node(&one, n, mp, note, sizeof(note));
    gs_cluster_release(&one);
    if (old) {
        gs_cluster_init(&one);
        gs_cache_add_node(&one, old, mp, was, sizeof(was));
        gs_cluster_release(&one);
    }
    json_t *ev = NULL;
    if (note[0] && strcmp(note, was) != 0) {
        char msg[400];
        snprintf(msg, sizeof(msg), "%s; it offers no GPUs%s", note,
                 n->refused[0] ? " and gets no new pods" : "");
        GS_WARN("cache", "node '%s': %s", n->name, msg);
        ev = gs_kube_node_event(n, "Warning", "GPUsUnusable", "Scheduling", msg, "gpusched");
    } else if (!note[0] && was[0]) {
        GS_INFO("cache", "node '%s': its GPUs are usable again", n->name);
        ev = gs_kube_node_event(n, "Normal", "GPUsUsable", "Scheduling",
                                "its GPUs are usable again", "gpusched");
    }
    if (ev) {
        if (!st->node_events)
            st->node_events = json_array();
        if (!st->node_events || json_array_size(st->node_events) >= 256 ||
            json_array_append_new(st->node_events, ev))
            json_decref(ev); /* a flood of node changes: the log has them */
    }
}

/* Takes what n owns (n is left empty). */
int gs__store_upsert_node(struct gs_store *s, struct gs_kube_node *n)
{
    int i = gs__store_find_node(s, n->name);
    report_node(s, i >= 0 ? &s->nodes[i] : NULL, n);
    if (i < 0) {
        if (s->nnodes == s->cap_nodes) {
            void *v = gs_grow(s->nodes, &s->cap_nodes, sizeof(*s->nodes), 64);
            if (!v)
                return GS_ENOMEM;
            s->nodes = v;
        }
        i = s->nnodes++;
        memset(&s->nodes[i], 0, sizeof(s->nodes[i]));
    }
    gs_kube_node_move(&s->nodes[i], n);
    return 0;
}

/* Takes p's reference to its constraints (p->k is left NULL). */
int gs__store_upsert_pod(struct gs_store *s, struct gs_kube_pod *p)
{
    int i = gs__store_find_pod(s, p->ns, p->name);
    if (i >= 0 && strcmp(s->pods[i].p.uid, p->uid) == 0) {
        struct gs_store_pod *e = &s->pods[i];
        gs_kube_pod_release(&e->p);
        if (e->assumed && !p->node[0]) {
            /* an older view of a pod we just bound: keep what we bound it to */
            char node[GS_KNAME_MAX], devices[256];
            memcpy(node, e->p.node, sizeof(node));
            memcpy(devices, e->p.devices, sizeof(devices));
            e->p = *p;
            p->k = NULL;
            memcpy(e->p.node, node, sizeof(node));
            memcpy(e->p.devices, devices, sizeof(devices));
            return 0;
        }
        e->p = *p;
        p->k = NULL;
        e->assumed = false;
        return 0;
    }
    if (i < 0) {
        if (s->npods == s->cap_pods) {
            void *v = gs_grow(s->pods, &s->cap_pods, sizeof(*s->pods), 256);
            if (!v)
                return GS_ENOMEM;
            s->pods = v;
        }
        i = s->npods++;
    } else {
        gs_kube_pod_release(&s->pods[i].p); /* a new pod under an old name */
    }
    memset(&s->pods[i], 0, sizeof(s->pods[i]));
    s->pods[i].p = *p;
    p->k = NULL;
    s->pods[i].seq = ++s->seq;
    return 0;
}

void gs__store_delete_node(struct gs_store *s, const char *name)
{
    int i = gs__store_find_node(s, name);
    if (i >= 0) {
        gs_kube_node_release(&s->nodes[i]);
        s->nodes[i] = s->nodes[--s->nnodes];
    }
}

void gs__store_delete_pod(struct gs_store *s, const char *ns, const char *name)
{
    int i = gs__store_find_pod(s, ns, name);
    if (i >= 0) {
        if (s->pods[i].p.uid[0]) {
            memcpy(s->gone[s->gone_next], s->pods[i].p.uid, sizeof(s->gone[0]));
            s->gone_next = (s->gone_next + 1) % GS_STORE_GONE;
            if (s->ngone < GS_STORE_GONE)
                s->ngone++;
        }
        gs_kube_pod_release(&s->pods[i].p);
        s->pods[i] = s->pods[--s->npods];
    }
}

bool gs__store_pod_gone(const struct gs_store *s, const char *uid)
{
    for (int k = 0; k < s->ngone; k++)
        if (strcmp(s->gone[k], uid) == 0)
            return true;
    return false;
}

int gs__store_replace_nodes(struct gs_store *s, struct gs_kube_node *v, int n)
{
    int rc = 0;
    for (int i = 0; i < s->nnodes; i++)
        gs_kube_node_release(&s->nodes[i]);
    s->nnodes = 0;
    for (int i = 0; i < n; i++) {
        int r = gs__store_upsert_node(s, &v[i]);
        rc = rc ? rc : r;
    }
    return rc;
}

int gs__store_replace_pods(struct gs_store *s, struct gs_kube_pod *v, int n)
{
    int rc = 0;
    struct gs_store_pod *old = s->pods;
    int nold = s->npods;
    s->pods = NULL;
    s->npods = s->cap_pods = 0;
    for (int i = 0; i < n; i++) {
        int r = gs__store_upsert_pod(s, &v[i]);
        rc = rc ? rc : r;
        for (int k = 0; k < nold && r == 0; k++)
            if (strcmp(old[k].p.uid, v[i].uid) == 0) {
                s->pods[s->npods - 1].next_try = old[k].next_try;
                s->pods[s->npods - 1].backoff = old[k].backoff;
                s->pods[s->npods - 1].seq = old[k].seq;
            }
    }
    for (int k = 0; k < nold; k++)
        gs_kube_pod_release(&old[k].p);
    free(old);
    return rc;
}
