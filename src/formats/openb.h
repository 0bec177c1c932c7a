/* openb.h - the openb GPU-cluster trace (Alibaba cluster-trace-gpu-v2023) as CSV.
 *
 * Node lists: sn,cpu_milli,memory_mib,gpu,model. Pod lists: name,cpu_milli,memory_mib,
 * num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time];
 * the multigpu* variants carry only the first five columns. Columns are found by header
 * name, so any order and any extra column is accepted; gpu_spec is a '|'-separated list
 * of allowed models. Parsers take (ptr, len), bound every line and field, and report
 * errors as "file:line: ..." without changing the output; the writer emits what the parser
 * reads. Thread-safe. */
#ifndef GS_OPENB_H
#define GS_OPENB_H

#include "../core/workload.h"

#include <stddef.h>
#include <stdint.h>

#define GS_OPENB_LINE_MAX 4096

struct gs_openb_node {
    char name[GS_NAME_MAX];
    int64_t cpu_milli, mem_mib;
    int gpus;
    int model; /* catalog id, -1 for CPU-only */
};

struct gs_openb_pod {
    char name[GS_NAME_MAX];
    struct gs_request req;
    int64_t creation, deletion, scheduled; /* seconds; -1 when absent */
    char qos[16];
};

struct gs_error;

/* Parse a node list. *out is malloc'd (caller frees); returns the count or a negative error. */
int gs_openb_parse_nodes(const char *name, const char *data, size_t len, struct gs_openb_node **out,
                         struct gs_error *err);
int gs_openb_parse_pods(const char *name, const char *data, size_t len, struct gs_openb_pod **out,
                        struct gs_error *err);
/* Write pods as a pod list the parser reads back unchanged (name,cpu_milli,memory_mib,num_gpu,
 * gpu_milli,gpu_spec,qos,creation_time,deletion_time,scheduled_time; an absent time is an
 * empty field). Returns 0 or GS_ENOMEM / GS_ENOSPC from the buffer. */
struct gs_buf;
int gs_openb_write_pods(const struct gs_openb_pod *pods, int n, struct gs_buf *b);
/* File wrappers. */
int gs_openb_load_nodes(const char *path, struct gs_openb_node **out, struct gs_error *err);
int gs_openb_load_pods(const char *path, struct gs_openb_pod **out, struct gs_error *err);

#endif
