/* log.h - leveled logging with a component tag.
 *
 * The macros check the level before formatting. Library code logs only through these;
 * output goes to the sink (stderr by default), set once at start-up by the binary.
 * gs_log_set_level and gs_log_set_sink are not thread-safe; logging itself is (one
 * fprintf per line). */
#ifndef GS_LOG_H
#define GS_LOG_H

#include <stdio.h>

enum gs_log_level { GS_LOG_ERROR = 0, GS_LOG_WARN, GS_LOG_INFO, GS_LOG_DEBUG };

extern enum gs_log_level gs__log_level;

void gs_log_set_level(enum gs_log_level level);
/* Parse "error|warn|info|debug"; returns 0 or GS_EINVAL. */
int gs_log_parse_level(const char *name, enum gs_log_level *out);
void gs_log_set_sink(FILE *sink);
void gs__log_write(enum gs_log_level level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define GS_LOG(level, component, ...)                                                              \
    do {                                                                                           \
        if ((level) <= gs__log_level)                                                              \
            gs__log_write((level), (component), __VA_ARGS__);                                      \
    } while (0)
#define GS_ERR(c, ...)   GS_LOG(GS_LOG_ERROR, c, __VA_ARGS__)
#define GS_WARN(c, ...)  GS_LOG(GS_LOG_WARN, c, __VA_ARGS__)
#define GS_INFO(c, ...)  GS_LOG(GS_LOG_INFO, c, __VA_ARGS__)
#define GS_DEBUG(c, ...) GS_LOG(GS_LOG_DEBUG, c, __VA_ARGS__)

#endif
