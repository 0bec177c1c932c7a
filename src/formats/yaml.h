/* yaml.h - thin, bounded helpers over libfyaml for gpusched's YAML and JSON formats.
 *
 * Every error names the file, the line and the field path ("x.yaml:12: mig-configs.mixed[0]
 * .devices: expected all or a list of GPU indexes"). A struct gs_yaml owns the parsed
 * document: gs_yaml_load / gs_yaml_release. Documents are capped at GS_YAML_MAX bytes and
 * scalars at the caller's buffer size. Every text handed to libfyaml (a document, a ConfigMap
 * before and after it is unwrapped) is first checked to be YAML text: UTF-8 without control
 * characters other than tab, CR and LF; anything else is refused with file:line:column
 * (libfyaml itself can spin forever on some broken bytes). Not thread-safe per document. */
#ifndef GS_YAML_H
#define GS_YAML_H

#include <libfyaml.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_YAML_MAX ((size_t)8 << 20)

struct gs_error;

struct gs_yaml {
    const char *name;
    struct fy_document *doc;
    int line_offset; /* added to every reported line (text cut from a larger file) */
};

/* The gate every text passes before libfyaml reads it (libfyaml spins forever on some bytes
 * that are not text): 0, or GS_EINVAL naming name:line:column and the byte. Bounded by len. */
int gs_yaml_text_check(const char *name, const char *data, size_t len, struct gs_error *err);

/* Parse one YAML (or JSON) document from memory; data need not be NUL-terminated. An empty
 * document yields a NULL root. */
int gs_yaml_load(struct gs_yaml *y, const char *name, const char *data, size_t len,
                 struct gs_error *err);
/* Same, for text that starts after line_offset lines of the named file. */
int gs_yaml_load_at(struct gs_yaml *y, const char *name, const char *data, size_t len,
                    int line_offset, struct gs_error *err);
void gs_yaml_release(struct gs_yaml *y);

struct gs_buf;

/* A format's reader of YAML text that starts after line_offset lines of the named file. */
typedef int (*gs_yaml_text_fn)(const char *name, const char *data, size_t len, int line_offset,
                               void *out, struct gs_error *err);
/* Run fn on data, or on the config.yaml of a ConfigMap when data is such a manifest (as
 * NVIDIA's configs are usually shipped), naming "file (ConfigMap x, data.config.yaml)". The
 * unwrapped text is checked to be YAML text before fn sees it. */
int gs_yaml_read_unwrapped(const char *name, const char *data, size_t len, gs_yaml_text_fn fn,
                           void *out, struct gs_error *err);
/* Read a file of at most GS_YAML_MAX bytes and run gs_yaml_read_unwrapped on it. */
int gs_yaml_read_file(const char *path, gs_yaml_text_fn fn, void *out, struct gs_error *err);

/* When data is a Kubernetes manifest stream holding a ConfigMap, copy the text of its first
 * data value whose key ends in .yaml, .yml or .json into text and set *line_offset to the
 * line before that text starts in the file. Returns 1 when unwrapped, 0 when data is not
 * such a manifest (text untouched), or a negative error (GS_EINVAL with file:line:column when
 * a possible manifest is not YAML text). */
int gs_yaml_unwrap_configmap(const char *name, const char *data, size_t len, struct gs_buf *text,
                             int *line_offset, char *what, size_t what_size, struct gs_error *err);
struct fy_node *gs_yaml_root(const struct gs_yaml *y);
/* 1-based line of a node (a mapping's or sequence's first entry; 0 when unknown). */
int gs_yaml_line(struct fy_node *n);
/* Set err to "<file>:<line>: <path>: <msg>". Returns GS_EINVAL. */
int gs_yaml_fail(const struct gs_yaml *y, struct fy_node *n, const char *path, struct gs_error *err,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Scalar text copied into buf (NUL-terminated). Fails when not a scalar or too long. */
int gs_yaml_str(const struct gs_yaml *y, struct fy_node *n, const char *path, char *buf,
                size_t size, struct gs_error *err);
int gs_yaml_bool(const struct gs_yaml *y, struct fy_node *n, const char *path, bool *out,
                 struct gs_error *err);
/* Integer in [lo, hi]. */
int gs_yaml_int(const struct gs_yaml *y, struct fy_node *n, const char *path, int64_t lo,
                int64_t hi, int64_t *out, struct gs_error *err);
int gs_yaml_double(const struct gs_yaml *y, struct fy_node *n, const char *path, double lo,
                   double hi, double *out, struct gs_error *err);
bool gs_yaml_is_map(struct fy_node *n);
bool gs_yaml_is_seq(struct fy_node *n);
bool gs_yaml_is_scalar(struct fy_node *n);
/* Key text of a pair (bounded copy). */
int gs_yaml_key(struct fy_node_pair *p, char *buf, size_t size);

#endif
