/* cel.c - compiling a CEL device selector (cel.h): the bounds on the source, then the parser
 * (cel_parse.c), the type checker (cel_check.c) and the cost estimate (cel_cost.c), in the
 * order upstream validates a selector. Evaluation is cel_eval.c's. */
#include "cel_internal.h"

#include "../base/error.h"

#include <string.h>

int gs_cel_compile(const char *src, size_t len, struct gs_cel *out, struct gs_error *err)
{
    struct gs_error local;
    if (!err) {
        gs_error_init(&local);
        err = &local;
    }
    out->n = out->nkids = out->ntypes = out->npool = 0;
    out->root = -1;
    out->refusal = GS_CEL_OK;
    out->max_cost = 0;
    if (len > GS_CEL_MAX_LEN)
        return gs__cel_fail(out, err, GS_CEL_INVALID, -1, "expression longer than %d bytes",
                            GS_CEL_MAX_LEN);
    if (memchr(src, '\0', len))
        return gs__cel_fail(out, err, GS_CEL_SYNTAX,
                            (int)((const char *)memchr(src, '\0', len) - src),
                            "NUL byte in the expression");
    int rc = gs__cel_parse(src, len, out, err);
    if (!rc)
        rc = gs__cel_check(out, err);
    if (rc) {
        out->root = -1;
        if (!out->refusal)
            out->refusal = GS_CEL_INVALID;
        return rc == GS_ENOMEM ? rc : GS_EINVAL;
    }
    out->max_cost = gs__cel_estimate(out);
    if (out->max_cost > GS_CEL_MAX_COST) {
        out->root = -1;
        return gs__cel_fail(out, err, GS_CEL_COSTLY, -1,
                            "estimated cost %llu exceeds %d (too complex)",
                            (unsigned long long)out->max_cost, GS_CEL_MAX_COST);
    }
    return 0;
}
