/* engine.c - the node search (engine.h): the engine's filters and policy scores, memoised
 * per request shape and node version, pick the best node; gs_engine_place_k then asks
 * core/constraints (a pod's affinity, anti-affinity, spreading, ports, node name) and the
 * caller's tolerations callback about the nodes the engine admits, and adds constraints'
 * scores to the policy's. The simulator (sim/) and the scheduler daemon call gs_engine_place
 * with their own cluster snapshot; both then apply the returned decision with
 * gs_cluster_bind (fit.c). The filters and devices are fit.c's, the scores policy.c's. */
#include "engine_internal.h"

#include "../base/error.h"

#include <stdlib.h>
#include <string.h>

#define MAX_NODE_SCORE 100

/* Score memo per request shape: for each of the last SHAPES distinct requests, every node's
 * verdict and score at the node's version stamp. Nodes change one at a time (a bind), so a
 * placement is mostly memo hits and scores only the nodes that changed. Devices are chosen
 * again for the winner alone. For the random policy (its score is a draw) the memo keeps
 * the verdicts alone. */
#define SHAPES 256
struct gs__shape_memo {
    uint64_t sig;
    uint8_t kind;  /* the request's (enum gs_req_kind) */
    uint64_t used; /* last use, for LRU replacement */
    uint32_t *ver;
    int8_t *why; /* -1: fits; else the gs_reason */
    int64_t *score;
    /* nodes 0..ncounted-1 by verdict: cnt[0] fit, cnt[1 + r] refused for gs_reason r */
    int32_t cnt[GS_R_COUNT + 1];
    int32_t ncounted;
};

struct gs_engine *gs_engine_new(const struct gs_policy *policy, const struct gs_typical *typical,
                                int max_nodes, uint64_t seed)
{
    struct gs_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->policy = policy ? policy : gs_policy_get(0);
    e->draws = gs__policy_random(e->policy);
    e->typ = typical;
    e->max_nodes = max_nodes > 0 ? max_nodes : 1;
    gs_rng_init(&e->rng, seed);
    e->scores = malloc(sizeof(*e->scores) * (size_t)e->max_nodes);
    e->feasible = malloc(sizeof(*e->feasible) * (size_t)e->max_nodes);
    e->rank = malloc(sizeof(*e->rank) * (size_t)e->max_nodes);
    if (e->rank) {
        /* a seeded random priority order over nodes, as the FGD paper's simulator gets by
         * prefixing node names with a random permutation and taking the smallest name */
        for (int i = 0; i < e->max_nodes; i++)
            e->rank[i] = i;
        for (int i = e->max_nodes - 1; i > 0; i--) {
            int j = (int)gs_rng_below(&e->rng, (uint64_t)i + 1);
            int32_t t = e->rank[i];
            e->rank[i] = e->rank[j];
            e->rank[j] = t;
        }
    }
    e->choices = malloc(sizeof(*e->choices) * (size_t)e->max_nodes);
    bool memo_ok = true;
    {
        e->memo_shapes = calloc(SHAPES, sizeof(*e->memo_shapes));
        for (int k = 0; e->memo_shapes && k < SHAPES; k++) {
            struct gs__shape_memo *sm = &e->memo_shapes[k];
            sm->ver = calloc((size_t)e->max_nodes, sizeof(*sm->ver));
            sm->why = calloc((size_t)e->max_nodes, sizeof(*sm->why));
            sm->score = calloc((size_t)e->max_nodes, sizeof(*sm->score));
            if (!sm->ver || !sm->why || !sm->score)
                memo_ok = false;
        }
    }
    static const struct gs_typical empty;
    if (!e->typ)
        e->typ = &empty;

    int frag = gs__policy_frag_mode(e->policy);
    if (frag >= 0)
        e->memo = gs_frag_memo_new((enum gs_frag_mode)frag);
    if (!e->scores || !e->feasible || !e->choices || !e->rank || !e->memo_shapes || !memo_ok) {
        gs_engine_free(e);
        return NULL;
    }
    return e;
}

void gs_engine_free(struct gs_engine *e)
{
    if (!e)
        return;
    gs_frag_memo_free(e->memo);
    free(e->scores);
    for (int k = 0; e->memo_shapes && k < SHAPES; k++) {
        free(e->memo_shapes[k].ver);
        free(e->memo_shapes[k].why);
        free(e->memo_shapes[k].score);
    }
    free(e->memo_shapes);
    free(e->rank);
    free(e->feasible);
    free(e->choices);
    free(e->kscores);
    free(e->scarce.node);
    free(e);
}

struct gs_rng *gs_engine_rng(struct gs_engine *e)
{
    return &e->rng;
}

/* The memo way for this request's shape (NULL without a memo), marked used. */
static struct gs__shape_memo *memo_for(struct gs_engine *e, const struct gs_request *req)
{
    if (!e->memo_shapes)
        return NULL;
    struct gs__shape_memo *sm = NULL;
    uint64_t sig = gs_request_sig(req);
    int lru = 0;
    for (int k = 0; k < SHAPES && !sm; k++) {
        if (e->memo_shapes[k].sig == sig)
            sm = &e->memo_shapes[k];
        else if (e->memo_shapes[k].used < e->memo_shapes[lru].used)
            lru = k;
    }
    if (!sm) {
        sm = &e->memo_shapes[lru];
        sm->sig = sig;
        sm->kind = req->kind;
        memset(sm->ver, 0, sizeof(*sm->ver) * (size_t)e->max_nodes);
        sm->ncounted = -1; /* counted again, even for a cluster of no nodes */
    }
    sm->used = ++e->tick;
    return sm;
}

/* Is node na with score sa better than node nb with sb: the higher score, then the lower
 * rank. */
static inline bool better(const struct gs_engine *e, int64_t sa, int na, int64_t sb, int nb)
{
    return sa > sb || (sa == sb && e->rank[na] < e->rank[nb]);
}

/* ---------- Kubernetes constraints (gs_engine_place_k) ---------- */

#define KTAINT GS_KVERDICT_COUNT       /* a taint verdict, beside the gs_kverdicts */
#define KFIT   (GS_KVERDICT_COUNT + 1) /* the caller's resource fit refused the node */
#define KTOP   32                      /* candidates examined in order before filtering them all */

/* Taints, then the constraints: -1 when node i passes both, else KTAINT or the gs_kverdict. */
static int kverdict(const struct gs_cluster *c, const struct gs_kplace *k, bool kfilter, int i)
{
    if (k->tol && !k->tol(k->tol_ctx, i))
        return KTAINT;
    if (k->fit && !k->fit(k->fit_ctx, i))
        return KFIT;
    if (kfilter) {
        enum gs_kverdict v = gs_kprep_filter(k->kp, k->ks, c, i);
        if (v != GS_KFIT && !(v == GS_KNO_NODE_AFFINITY && k->selector_in_req))
            return (int)v;
    }
    return -1;
}

static void count_k(struct gs_reasons *r, int v)
{
    if (v == KTAINT)
        r->taint++;
    else if (v == KFIT)
        r->fit++;
    else
        r->kverdict[v]++;
}

/* A node no filter admits, counted under the first that refuses it in upstream's order:
 * node unschedulable, node name, taints, node affinity (with the engine's model and selector
 * checks), host ports, the engine's resource and device fit, spreading and inter-pod
 * (anti-)affinity. why is the engine's verdict. */
static void count_refusal(const struct gs_cluster *c, int i, int why, const struct gs_kplace *k,
                          bool kfilter, struct gs_reasons *r)
{
    enum gs_kverdict v = GS_KFIT;
    if (kfilter) {
        v = gs_kprep_filter(k->kp, k->ks, c, i);
        if (v == GS_KNO_NODE_AFFINITY && k->selector_in_req)
            v = GS_KFIT;
    }
    if (why == GS_R_UNSCHEDULABLE)
        r->count[why]++;
    else if (v == GS_KNO_NODE_NAME)
        r->kverdict[v]++;
    else if (k->tol && !k->tol(k->tol_ctx, i))
        r->taint++;
    else if (why < 0 && k->fit && !k->fit(k->fit_ctx, i))
        r->fit++;
    else if (why == GS_R_MODEL || why == GS_R_SELECTOR)
        r->count[why]++;
    else if (v == GS_KNO_NODE_AFFINITY || v == GS_KNO_PORTS)
        r->kverdict[v]++;
    else if (why >= 0)
        r->count[why]++;
    else if (v != GS_KFIT)
        r->kverdict[v]++;
}

/* The Kubernetes scores of the nf nodes in e->feasible into e->kscores. Returns 1 when every
 * one is zero, 0 when not, or GS_ENOMEM. */
static int kscore(struct gs_engine *e, const struct gs_cluster *c, const struct gs_kplace *k,
                  int nf)
{
    if (!e->kscores) {
        e->kscores = malloc(sizeof(*e->kscores) * (size_t)e->max_nodes);
        if (!e->kscores)
            return GS_ENOMEM;
    }
    int rc = gs_kprep_score(k->kp, k->ks, c, e->feasible, nf, e->kscores, k->tol, k->tol_ctx);
    if (rc)
        return rc;
    /* all zero, read as words (a loop the compiler vectorises) */
    const unsigned char *b = (const unsigned char *)e->kscores;
    size_t words = sizeof(*e->kscores) * (size_t)nf / sizeof(uint64_t);
    uint64_t any = 0;
    for (size_t w = 0; w < words; w++) {
        uint64_t x;
        memcpy(&x, b + w * sizeof(x), sizeof(x));
        any |= x;
    }
    return any == 0;
}

/* The winner among the nf feasible nodes by the documented weighting, from e->kscores; *best
 * (the policy's choice) stays when the Kubernetes scores are equal on every node. */
static void kscore_choose(struct gs_engine *e, int nf, int *best)
{
    int64_t k0 = gs_kscore_total(&e->kscores[0]);
    bool flat = true;
    int64_t hi = e->scores[0], lo = e->scores[0];
    for (int j = 1; j < nf; j++) {
        flat &= gs_kscore_total(&e->kscores[j]) == k0;
        if (e->scores[j] > hi)
            hi = e->scores[j];
        if (e->scores[j] < lo)
            lo = e->scores[j];
    }
    if (flat)
        return;
    /* min-max as upstream normalises; in double, as raw policy scores reach 2^62 */
    int b = 0;
    int64_t bt = INT64_MIN;
    for (int j = 0; j < nf; j++) {
        int64_t g =
            hi == lo ? 0
                     : (int64_t)((double)(e->scores[j] - lo) / (double)(hi - lo) * GS_KMAX_SCORE);
        int64_t t = GS_ENGINE_KWEIGHT_POLICY * g + gs_kscore_total(&e->kscores[j]);
        if (j == 0 || t > bt ||
            (t == bt && better(e, e->scores[j], e->feasible[j], e->scores[b], e->feasible[b]))) {
            b = j;
            bt = t;
        }
    }
    *best = b;
}

/* When the Kubernetes scores cannot change the order (all zero), the winner is the first node
 * in the policy's order that taints and constraints admit: examine the best, then the next
 * KTOP, before filtering every node. Returns the winner's index in e->feasible, -1 when every
 * node was examined and refused, -2 when undecided. */
static int lazy_pick(struct gs_engine *e, const struct gs_cluster *c, const struct gs_kplace *k,
                     bool kfilter, int nf, int best, struct gs_reasons *lr)
{
    int v = kverdict(c, k, kfilter, e->feasible[best]);
    if (v < 0)
        return best;
    count_k(lr, v);
    /* the next KTOP by (score, rank), sorted; the last one's score and rank in registers */
    int top[KTOP], nt = 0;
    int64_t ls = INT64_MAX;
    int32_t lrk = -1;
    for (int j = 0; j < nf; j++) {
        int64_t sc = e->scores[j];
        if (j == best || (nt == KTOP && (sc < ls || (sc == ls && e->rank[e->feasible[j]] > lrk))))
            continue;
        int at = nt < KTOP ? nt++ : KTOP - 1;
        while (at > 0 &&
               better(e, sc, e->feasible[j], e->scores[top[at - 1]], e->feasible[top[at - 1]])) {
            top[at] = top[at - 1];
            at--;
        }
        top[at] = j;
        ls = e->scores[top[nt - 1]];
        lrk = e->rank[e->feasible[top[nt - 1]]];
    }
    for (int t = 0; t < nt; t++) {
        if ((v = kverdict(c, k, kfilter, e->feasible[top[t]])) < 0)
            return top[t];
        count_k(lr, v);
    }
    return nf - 1 <= KTOP ? -1 : -2;
}

/* ---------- node selection ---------- */

/* Devices a score left to be chosen (a->node -1: the random policy's for a request whose
 * device choice draws nothing) chosen now, on node. */
static void finish_choice(struct gs_engine *e, const struct gs_cluster *c, int node,
                          const struct gs_request *req, struct gs_alloc *a)
{
    if (a->node < 0)
        gs__fit_choose(&e->rng, c, node, req, GS__FIT_RANDOM, a);
}

/* The policy's state of the cluster brought up to date; the memo's scores of whole and shared
 * GPUs on the nodes whose score it changed (their GPU model is in the mask it returns) are
 * forgotten. */
static void prepare(struct gs_engine *e, const struct gs_cluster *c)
{
    uint32_t models = e->policy->prepare ? e->policy->prepare(e, c) : 0;
    for (int i = 0; models && e->memo_shapes && i < c->nnodes; i++) {
        int m = c->nodes[i].model;
        if (m < 0 || m >= 32 || !(models & (1u << m)))
            continue;
        for (int k = 0; k < SHAPES; k++)
            if (e->memo_shapes[k].kind == GS_REQ_GPU || e->memo_shapes[k].kind == GS_REQ_FRACTION)
                e->memo_shapes[k].ver[i] = 0;
    }
}

/* The engine's verdict on node i into the memo. */
static void memo_refresh(struct gs_engine *e, const struct gs_cluster *c,
                         const struct gs_request *req, struct gs__shape_memo *sm, int i)
{
    int why = gs__fit_reason(c, i, req);
    if (i < sm->ncounted) {
        sm->cnt[1 + sm->why[i]]--;
        sm->cnt[1 + why]++;
    }
    sm->ver[i] = c->nodes[i].version;
    sm->why[i] = (int8_t)why;
    /* a draw is never kept: the random policy's memo holds verdicts alone */
    sm->score[i] = why < 0 && !e->draws ? e->policy->score(e, c, i, req, &e->choices[0]) : 0;
}

/* The engine's filters and scores from the memo sm, refreshed first for the nodes that
 * changed; its refusals counted into lr. With list, every node it admits goes to e->feasible;
 * without, the winner alone stands for them. Returns the winner's index in e->feasible (-1
 * when none) and the count in *nfp. */
static int scan_memo(struct gs_engine *e, const struct gs_cluster *c, const struct gs_request *req,
                     struct gs__shape_memo *sm, bool list, struct gs_reasons *lr, int *nfp)
{
    int nf = 0;
    for (int i = 0; i < c->nnodes; i++)
        if (sm->ver[i] != c->nodes[i].version)
            memo_refresh(e, c, req, sm, i);
    const int8_t *why = sm->why;
    const int64_t *score = sm->score;
    if (sm->ncounted != c->nnodes) {
        memset(sm->cnt, 0, sizeof(sm->cnt));
        for (int i = 0; i < c->nnodes; i++)
            sm->cnt[1 + why[i]]++;
        sm->ncounted = c->nnodes;
    }
    for (int j = 0; j < GS_R_COUNT; j++)
        lr->count[j] = sm->cnt[1 + j];
    /* the best by (score, rank), kept in registers: ties are common (empty nodes) */
    int64_t bs = INT64_MIN;
    int32_t br = INT32_MAX;
    int bi = -1;
    if (list) {
        /* branch-free: whether a node fits follows no pattern a predictor learns */
        int32_t *fe = e->feasible;
        int64_t *fs = e->scores;
        const int32_t *rank = e->rank;
        for (int i = 0; i < c->nnodes; i++) {
            int64_t sc = score[i];
            int32_t rk = rank[i];
            bool fit = why[i] < 0;
            fe[nf] = i;
            fs[nf] = sc;
            bool b = fit & ((sc > bs) | ((sc == bs) & (rk < br)));
            bs = b ? sc : bs;
            br = b ? rk : br;
            bi = b ? nf : bi;
            nf += fit;
        }
    } else {
        for (int i = 0; i < c->nnodes; i++) {
            int64_t sc = score[i];
            int32_t rk = e->rank[i];
            if (why[i] < 0 && (sc > bs || (sc == bs && rk < br))) {
                bs = sc;
                br = rk;
                bi = i;
            }
        }
        if (bi >= 0) { /* the winner alone stands for the feasible nodes */
            e->feasible[0] = bi;
            e->scores[0] = bs;
            bi = 0;
            nf = 1;
        }
    }
    *nfp = nf;
    return bi;
}

/* For the random policy, whose scores are draws: the verdicts from the memo sm (refreshed
 * for the nodes that changed, as scan_memo does), every node that fits scored afresh in node
 * order, into e->feasible with its devices in e->choices. Returns the winner's index (-1 when
 * none) and the count in *nfp. */
static int scan_all(struct gs_engine *e, const struct gs_cluster *c, const struct gs_request *req,
                    struct gs__shape_memo *sm, struct gs_reasons *lr, int *nfp)
{
    int nf = 0, best = -1;
    for (int i = 0; i < c->nnodes; i++)
        if (sm->ver[i] != c->nodes[i].version)
            memo_refresh(e, c, req, sm, i);
    for (int i = 0; i < c->nnodes; i++) {
        int why = sm->why[i];
        if (why >= 0) {
            lr->count[why]++;
            continue;
        }
        int64_t s = e->policy->score(e, c, i, req, &e->choices[nf]);
        e->feasible[nf] = i;
        e->scores[nf] = s;
        if (best < 0 || better(e, s, i, e->scores[best], e->feasible[best]))
            best = nf;
        nf++;
    }
    *nfp = nf;
    return best;
}

/* Taints, the caller's fit and the constraints narrow the nf nodes in e->feasible down:
 * lazily when the Kubernetes scores are all zero (kzero, see lazy_pick), else node by node,
 * the refusals counted into lr. Returns the count left; *best is the winner among them, and
 * *kscored is cleared when the list changed. */
static int k_narrow(struct gs_engine *e, const struct gs_cluster *c, const struct gs_kplace *k,
                    bool memo, bool kfilter, bool kzero, int nf, int *best, bool *kscored,
                    struct gs_reasons *lr)
{
    int w = -2;
    if (memo && !e->policy->normalize && kzero)
        w = lazy_pick(e, c, k, kfilter, nf, *best, lr);
    if (w >= 0) {
        *best = w;
        return nf;
    }
    if (w == -1)
        return 0;
    /* every node through taints and constraints */
    int n2 = 0, b = -1;
    lr->taint = lr->fit = 0;
    memset(lr->kverdict, 0, sizeof(lr->kverdict));
    for (int j = 0; j < nf; j++) {
        int i = e->feasible[j], v = kverdict(c, k, kfilter, i);
        if (v >= 0) {
            count_k(lr, v);
            continue;
        }
        e->feasible[n2] = i;
        e->scores[n2] = e->scores[j];
        if (!memo)
            e->choices[n2] = e->choices[j];
        if (b < 0 || better(e, e->scores[n2], i, e->scores[b], e->feasible[b]))
            b = n2;
        n2++;
    }
    *best = b;
    *kscored &= n2 == nf;
    return n2;
}

/* This call's counts lr added to the caller's r, over the cluster's nnodes. */
static void reasons_add(struct gs_reasons *r, const struct gs_reasons *lr, int nnodes)
{
    for (int j = 0; j < GS_R_COUNT; j++)
        r->count[j] += lr->count[j];
    r->nodes += nnodes;
    r->other += lr->taint + lr->fit;
    r->taint += lr->taint;
    r->fit += lr->fit;
    for (int v = 0; v < GS_KVERDICT_COUNT; v++) {
        r->other += lr->kverdict[v];
        r->kverdict[v] += lr->kverdict[v];
    }
}

/* The policy's scores of the nf feasible nodes min-max normalised to 0..MAX_NODE_SCORE in
 * place; returns the winner's index. */
static int normalize_scores(struct gs_engine *e, int nf)
{
    int64_t hi = INT64_MIN, lo = INT64_MAX;
    for (int j = 0; j < nf; j++) {
        if (e->scores[j] > hi)
            hi = e->scores[j];
        if (e->scores[j] < lo)
            lo = e->scores[j];
    }
    int best = 0;
    for (int j = 0; j < nf; j++) {
        e->scores[j] = hi == lo ? 0 : (e->scores[j] - lo) * MAX_NODE_SCORE / (hi - lo);
        if (j > 0 && better(e, e->scores[j], e->feasible[j], e->scores[best], e->feasible[best]))
            best = j;
    }
    return best;
}

/* gs_engine_place and gs_engine_place_k (k NULL: no taints or constraints, and the choice is
 * the policy's alone). The engine's filters and scores come from the memo, refreshed first for
 * the nodes that changed; the nodes they admit are e->feasible. Taints and constraints then
 * narrow those down, lazily when the Kubernetes scores are all zero (see lazy_pick). */
static int place(struct gs_engine *e, const struct gs_cluster *c, const struct gs_request *req,
                 int32_t pod, const struct gs_kplace *k, struct gs_decision *d,
                 struct gs_reasons *r)
{
    if (c->nnodes > e->max_nodes)
        return GS_EINVAL;
    prepare(e, c);
    struct gs__shape_memo *sm = memo_for(e, req);
    struct gs_reasons lr; /* this call's counts, added to r at the end */
    memset(&lr, 0, sizeof(lr));
    int nf = 0, best = -1;
    /* scores kept in the memo: every policy's but the draws of the random one */
    bool memo = sm && !e->draws;
    /* the feasible list, for what looks at every feasible node: constraints, and normalising
     * where the Kubernetes scores are added (else the raw scores' winner is the normalised
     * scores': only the top raw score normalises to the top) */
    bool list = !memo || (k && (k->kp || k->tol || k->fit));
    if (!sm)
        return GS_EINTERNAL;
    if (memo)
        best = scan_memo(e, c, req, sm, list, &lr, &nf);
    else
        best = scan_all(e, c, req, sm, &lr, &nf);
    bool kfilter = k && k->kp && !gs_kprep_trivial(k->kp);
    bool kzero = !k || !k->kp; /* the Kubernetes scores are all zero */
    bool kscored = false;      /* e->kscores are those of e->feasible[0..nf) */
    if (nf > 0 && !kzero) {
        int rc = kscore(e, c, k, nf);
        if (rc < 0)
            return rc;
        kzero = rc == 1;
        kscored = true;
    }
    if (nf > 0 && k && (k->tol || k->fit || kfilter))
        nf = k_narrow(e, c, k, memo, kfilter, kzero, nf, &best, &kscored, &lr);
    if (nf == 0 && k && r) {
        /* no node fits: say why in upstream's order, node by node (the memo holds every
         * node's engine verdict now) */
        memset(&lr, 0, sizeof(lr));
        bool kf = k->kp && !gs_kprep_trivial(k->kp);
        for (int i = 0; i < c->nnodes; i++)
            count_refusal(c, i, sm->why[i], k, kf, &lr);
    }
    if (r)
        reasons_add(r, &lr, c->nnodes);
    if (nf == 0)
        return GS_ENOFIT;
    if (e->policy->normalize && !kzero)
        best = normalize_scores(e, nf);
    if (!kzero) {
        /* scored over the feasible nodes, as upstream scores only those */
        int rc = kscored ? 0 : kscore(e, c, k, nf);
        if (rc < 0)
            return rc;
        if (rc == 0)
            kscore_choose(e, nf, &best);
    }
    memset(d, 0, sizeof(*d));
    d->kind = GS_DECIDE_BIND;
    d->pod = pod;
    if (memo) /* devices of the winner: its score function chooses them again */
        e->policy->score(e, c, e->feasible[best], req, &d->alloc);
    else
        d->alloc = e->choices[best];
    finish_choice(e, c, e->feasible[best], req, &d->alloc);
    if (req->kind != GS_REQ_NONE && d->alloc.ndev == 0)
        return GS_EINTERNAL;
    return 0;
}

int gs_engine_place(struct gs_engine *e, const struct gs_cluster *c, const struct gs_request *req,
                    int32_t pod, struct gs_decision *d, struct gs_reasons *r)
{
    return place(e, c, req, pod, NULL, d, r);
}

int gs_engine_place_among(struct gs_engine *e, const struct gs_cluster *c,
                          const struct gs_request *req, int32_t pod, const int32_t *nodes, int n,
                          struct gs_decision *d)
{
    if (c->nnodes > e->max_nodes)
        return GS_EINVAL;
    prepare(e, c);
    struct gs__shape_memo *sm = memo_for(e, req);
    if (!sm)
        return GS_EINTERNAL;
    int64_t bs = INT64_MIN;
    int32_t bi = -1;
    for (int j = 0; j < n; j++) {
        int i = nodes[j];
        if (i < 0 || i >= c->nnodes)
            continue;
        if (sm->ver[i] != c->nodes[i].version)
            memo_refresh(e, c, req, sm, i);
        if (sm->why[i] >= 0)
            continue;
        int64_t sc = e->draws ? e->policy->score(e, c, i, req, &e->choices[0]) : sm->score[i];
        if (bi < 0 || better(e, sc, i, bs, bi)) {
            bs = sc;
            bi = i;
        }
    }
    if (bi < 0)
        return GS_ENOFIT;
    memset(d, 0, sizeof(*d));
    d->kind = GS_DECIDE_BIND;
    d->pod = pod;
    e->policy->score(e, c, bi, req, &d->alloc);
    finish_choice(e, c, bi, req, &d->alloc);
    if (req->kind != GS_REQ_NONE && d->alloc.ndev == 0)
        return GS_EINTERNAL;
    return 0;
}

int gs_engine_place_k(struct gs_engine *e, const struct gs_cluster *c, const struct gs_request *req,
                      int32_t pod, const struct gs_kplace *k, struct gs_decision *d,
                      struct gs_reasons *r)
{
    if (k && !k->ks != !k->kp)
        return GS_EINVAL;
    return place(e, c, req, pod, k, d, r);
}

int64_t gs_engine_score(struct gs_engine *e, const struct gs_cluster *c, int node,
                        const struct gs_request *req, struct gs_alloc *choice)
{
    if (c->nnodes <= e->max_nodes)
        prepare(e, c);
    int64_t s = e->policy->score(e, c, node, req, choice);
    finish_choice(e, c, node, req, choice);
    return s;
}
