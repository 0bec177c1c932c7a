/* banned.h - functions gpusched code must not call (unbounded or locale-dependent).
 * Included by every translation unit through the build flags; a use is a compile error. */
#ifndef GS_BANNED_H
#define GS_BANNED_H

/* system headers first, so their own declarations are not rewritten */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GS_BANNED(func) sorry_##func##_is_banned_in_gpusched

#undef strcpy
#define strcpy(x, y) GS_BANNED(strcpy)
#undef strcat
#define strcat(x, y) GS_BANNED(strcat)
#undef sprintf
#define sprintf(...) GS_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) GS_BANNED(vsprintf)
#undef strtok
#define strtok(x, y) GS_BANNED(strtok)
#undef atoi
#define atoi(x) GS_BANNED(atoi)
#undef atol
#define atol(x) GS_BANNED(atol)
#undef gets
#define gets(x) GS_BANNED(gets)

#endif
