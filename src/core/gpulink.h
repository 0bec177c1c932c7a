/* gpulink.h - the links between the GPUs of one node (NVLink, the PCIe path between them, their
 * NUMA nodes) and the choice of the best-linked set of GPUs for a multi-GPU pod.
 *
 * The score follows NVIDIA's device plugin's best-effort policy (go-gpuallocator): a pair of
 * GPUs scores 100 per NVLink link between them plus the closeness of their PCIe path: 60 on
 * one board, 50 under one PCIe switch, 40 across several switches, 30 through one host bridge,
 * 20 under one CPU (NUMA node), 10 across CPUs, 0 when not known; a set scores the sum of its
 * pairs. gs_link_choose takes the set of the free GPUs with the highest score; among sets of
 * equal score it takes the one whose GPUs are least linked to the free GPUs it leaves behind
 * (so a 1-GPU pod takes a GPU whose NVLink partner is busy, and whole pairs stay free), then
 * the lowest indexes. Every set is weighed: at most 12,870 (8 of 16 GPUs), each in O(k).
 *
 * A node's links are one struct gs_gpu_link per GPU, indexed by the node-local GPU index (the
 * physical index where the node's inventory gives one); all zero means not known. Plain data;
 * pure functions, thread-safe. */
#ifndef GS_GPULINK_H
#define GS_GPULINK_H

#include <stdbool.h>
#include <stdint.h>

#define GS_LINK_MAX_GPUS 16

/* How two GPUs reach each other over PCIe, closest last (NVML's topology levels). */
enum gs_pcie_level {
    GS_PCIE_UNKNOWN = 0,
    GS_PCIE_CROSS_CPU,     /* through the CPUs' interconnect (two NUMA nodes) */
    GS_PCIE_SAME_CPU,      /* two host bridges of one CPU */
    GS_PCIE_HOST_BRIDGE,   /* one host bridge (root complex) */
    GS_PCIE_MULTI_SWITCH,  /* several PCIe switches, no host bridge */
    GS_PCIE_SINGLE_SWITCH, /* one PCIe switch */
    GS_PCIE_SAME_BOARD,    /* one board (one downstream port) */
};

/* One GPU's links to the other GPUs of its node, by node-local index. */
struct gs_gpu_link {
    uint8_t nvlink[GS_LINK_MAX_GPUS]; /* NVLink links to GPU j; 0: none */
    uint8_t pcie[GS_LINK_MAX_GPUS];   /* enum gs_pcie_level of the path to GPU j */
};

/* Whether l says anything (an NVLink or a PCIe level to some GPU). */
bool gs_link_known(const struct gs_gpu_link *l);

/* The score of GPUs a and b of links (n GPUs): 100 per NVLink link plus 10 per PCIe level. */
int gs_link_pair_score(const struct gs_gpu_link *links, int a, int b);

/* The PCIe level between two GPUs from their PCIe paths, the bridges from the root complex
 * down to the GPU separated by '/' ("pci0000:00/0000:00:01.0/0000:02:00.0/0000:03:00.0", as
 * under /sys/devices), and their NUMA nodes (-1: not known). Paths that share their root
 * complex compare by where they part: below the GPUs' common parent bridge, one board; below
 * a common switch (parting two levels above the GPUs), one switch; deeper, several switches;
 * at the root port, one host bridge. Different roots: one CPU when the NUMA nodes are known
 * and equal, else across CPUs when both are known, else not known. */
enum gs_pcie_level gs_link_pcie_level(const char *path_a, int numa_a, const char *path_b,
                                      int numa_b);

/* Choose k GPUs of links (n GPUs, n <= GS_LINK_MAX_GPUS) among those of bit mask free, with
 * those of must (a subset of free) among them, by the rules above; out[0..k) gets them in
 * index order. Returns k, or -1 when free holds fewer than k GPUs or must more than k. */
int gs_link_choose(const struct gs_gpu_link *links, int n, uint32_t free, uint32_t must, int k,
                   int *out);

#endif
