/* gpulink.c - link scores and the best-linked GPU set (gpulink.h): the engine's device choice
 * (core/fit.c), the DRA allocator (core/dra.c) and the agent's device plugin choose with it,
 * from links the agent publishes in its inventory (formats/inventory.c). */
#include "gpulink.h"

#include <stdlib.h>
#include <string.h>

bool gs_link_known(const struct gs_gpu_link *l)
{
    for (int j = 0; j < GS_LINK_MAX_GPUS; j++)
        if (l->nvlink[j] || l->pcie[j])
            return true;
    return false;
}

int gs_link_pair_score(const struct gs_gpu_link *links, int a, int b)
{
    if (a == b)
        return 0;
    return 100 * links[a].nvlink[b] + 10 * links[a].pcie[b];
}

/* The components of a PCIe path ("a/b/c"): their starts and lengths, at most cap. */
static int split(const char *p, const char **start, int *len, int cap)
{
    int n = 0;
    while (p && *p && n < cap) {
        const char *e = strchr(p, '/');
        int l = e ? (int)(e - p) : (int)strlen(p);
        if (l > 0) {
            start[n] = p;
            len[n++] = l;
        }
        p = e ? e + 1 : NULL;
    }
    return n;
}

#define PATH_MAX_PARTS 16

enum gs_pcie_level gs_link_pcie_level(const char *path_a, int numa_a, const char *path_b,
                                      int numa_b)
{
    const char *sa[PATH_MAX_PARTS], *sb[PATH_MAX_PARTS];
    int la[PATH_MAX_PARTS], lb[PATH_MAX_PARTS];
    int na = split(path_a, sa, la, PATH_MAX_PARTS), nb = split(path_b, sb, lb, PATH_MAX_PARTS);
    int c = 0;
    while (c < na && c < nb && la[c] == lb[c] && memcmp(sa[c], sb[c], (size_t)la[c]) == 0)
        c++;
    if (na >= 2 && nb >= 2 && c >= 1 && c < na && c < nb) {
        if (c == 1)
            return GS_PCIE_HOST_BRIDGE;
        if (c >= na - 1 && c >= nb - 1)
            return GS_PCIE_SAME_BOARD;
        if (c >= na - 2 && c >= nb - 2)
            return GS_PCIE_SINGLE_SWITCH;
        return GS_PCIE_MULTI_SWITCH;
    }
    if (numa_a < 0 || numa_b < 0)
        return GS_PCIE_UNKNOWN;
    return numa_a == numa_b ? GS_PCIE_SAME_CPU : GS_PCIE_CROSS_CPU;
}

struct pick {
    const struct gs_gpu_link *links;
    int cand[GS_LINK_MAX_GPUS], ncand; /* free GPUs not in must, in index order */
    int row[GS_LINK_MAX_GPUS];         /* each GPU's score with every free GPU */
    int set[GS_LINK_MAX_GPUS], nset;
    int best[GS_LINK_MAX_GPUS];
    long best_inside, best_damage;
    bool found;
};

/* Add cand[from..) to the set until it holds k; inside and rows so far. */
static void walk(struct pick *p, int from, int k, long inside, long rows)
{
    if (p->nset == k) {
        long damage = rows - 2 * inside; /* the set's score with the free GPUs it leaves */
        if (!p->found || inside > p->best_inside ||
            (inside == p->best_inside && damage < p->best_damage)) {
            p->found = true;
            p->best_inside = inside;
            p->best_damage = damage;
            memcpy(p->best, p->set, sizeof(p->best));
        }
        return;
    }
    for (int i = from; i <= p->ncand - (k - p->nset); i++) {
        int g = p->cand[i];
        long add = 0;
        for (int s = 0; s < p->nset; s++)
            add += gs_link_pair_score(p->links, g, p->set[s]);
        p->set[p->nset++] = g;
        walk(p, i + 1, k, inside + add, rows + p->row[g]);
        p->nset--;
    }
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int gs_link_choose(const struct gs_gpu_link *links, int n, uint32_t free, uint32_t must, int k,
                   int *out)
{
    if (n < 0 || n > GS_LINK_MAX_GPUS || k < 0)
        return -1;
    uint32_t all = (1u << n) - 1;
    free &= all;
    must &= free;
    if (__builtin_popcount(free) < k || __builtin_popcount(must) > k)
        return -1;
    struct pick p;
    memset(&p, 0, sizeof(p));
    p.links = links;
    for (int i = 0; i < n; i++) {
        if (!(free & (1u << i)))
            continue;
        for (int j = 0; j < n; j++)
            if (free & (1u << j))
                p.row[i] += gs_link_pair_score(links, i, j);
        if (!(must & (1u << i)))
            p.cand[p.ncand++] = i;
    }
    long inside = 0, rows = 0;
    for (int i = 0; i < n; i++) {
        if (!(must & (1u << i)))
            continue;
        for (int s = 0; s < p.nset; s++)
            inside += gs_link_pair_score(links, i, p.set[s]);
        rows += p.row[i];
        p.set[p.nset++] = i;
    }
    walk(&p, 0, k, inside, rows);
    if (!p.found)
        return -1;
    memcpy(out, p.best, sizeof(int) * (size_t)k);
    qsort(out, (size_t)k, sizeof(int), cmp_int);
    return k;
}
