/* log.c - the sink behind the GS_* logging macros of log.h. */
#include "log.h"

#include "error.h"

#include <stdarg.h>
#include <string.h>

enum gs_log_level gs__log_level = GS_LOG_WARN;
static FILE *log_sink;

void gs_log_set_level(enum gs_log_level level)
{
    gs__log_level = level;
}

int gs_log_parse_level(const char *name, enum gs_log_level *out)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (enum gs_log_level)i;
            return 0;
        }
    }
    return GS_EINVAL;
}

void gs_log_set_sink(FILE *sink)
{
    log_sink = sink;
}

void gs__log_write(enum gs_log_level level, const char *component, const char *fmt, ...)
{
    static const char *tags[] = {"error", "warn", "info", "debug"};
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(log_sink ? log_sink : stderr, "%s: %s: %s\n", tags[level], component, line);
}
