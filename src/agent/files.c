/* files.c - the agent's small file helpers (see files.h). */
#include "files.h"

#include "../base/error.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_SIZE 1024

int gs_file_mkdir_p(const char *path, struct gs_error *err)
{
    char p[PATH_SIZE];
    snprintf(p, sizeof(p), "%s", path);
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c != '\0')
            continue;
        char was = *c;
        *c = '\0';
        if (mkdir(p, 0755) && errno != EEXIST)
            return gs_error_set(err, GS_EIO, "mkdir %s: %s", p, strerror(errno));
        if (!(*c = was))
            return 0;
    }
}

int gs_file_write_atomic(const char *path, const char *text, struct gs_error *err)
{
    char tmp[PATH_SIZE + 8];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return gs_error_set(err, GS_EIO, "%s: %s", tmp, strerror(errno));
    bool ok = fputs(text, f) >= 0;
    ok &= fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return gs_error_set(err, GS_EIO, "%s: %s", path, strerror(e));
    }
    return 0;
}
