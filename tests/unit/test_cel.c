/* The CEL subset of DRA device selectors (formats/cel.h): what selects which device, CEL's
 * error semantics, and every construct outside the subset refused as "unsupported" with its
 * name and position. */
#include "base/error.h"
#include "formats/cel.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static void attr_s(struct gs_dra_device *d, const char *name, const char *v)
{
    struct gs_dra_attr *a = &d->attrs[d->nattrs++];
    memset(a, 0, sizeof(*a));
    snprintf(a->name, sizeof(a->name), "%s", name);
    a->v.type = GS_DRA_STRING;
    snprintf(a->v.s, sizeof(a->v.s), "%s", v);
}

static void attr_i(struct gs_dra_device *d, const char *name, int64_t v)
{
    struct gs_dra_attr *a = &d->attrs[d->nattrs++];
    memset(a, 0, sizeof(*a));
    snprintf(a->name, sizeof(a->name), "%s", name);
    a->v.type = GS_DRA_INT;
    a->v.i = v;
}

static void attr_b(struct gs_dra_device *d, const char *name, bool v)
{
    struct gs_dra_attr *a = &d->attrs[d->nattrs++];
    memset(a, 0, sizeof(*a));
    snprintf(a->name, sizeof(a->name), "%s", name);
    a->v.type = GS_DRA_BOOL;
    a->v.b = v;
}

static void cap_q(struct gs_dra_device *d, const char *name, const char *q)
{
    struct gs_dra_attr *a = &d->attrs[d->nattrs++];
    memset(a, 0, sizeof(*a));
    snprintf(a->name, sizeof(a->name), "%s", name);
    a->capacity = true;
    a->v.type = GS_DRA_QUANTITY;
    cr_assert_eq(gs_quantity_parse(q, strlen(q), &a->v.q, NULL), 0);
}

/* gpu-0 of an A100-80GB and its 3g.40gb placement at 4 */
static struct gs_dra_device gpu, mig;

static void setup(void)
{
    memset(&gpu, 0, sizeof(gpu));
    snprintf(gpu.driver, sizeof(gpu.driver), "gpu.gpusched.io");
    snprintf(gpu.name, sizeof(gpu.name), "gpu-0");
    attr_s(&gpu, "gpu.gpusched.io/type", "gpu");
    attr_s(&gpu, "gpu.gpusched.io/productName", "A100-80GB");
    attr_s(&gpu, "gpu.gpusched.io/uuid", "GPU-1111");
    attr_i(&gpu, "gpu.gpusched.io/index", 0);
    cap_q(&gpu, "gpu.gpusched.io/memory", "80Gi");
    mig = gpu;
    mig.nattrs = 0;
    snprintf(mig.name, sizeof(mig.name), "gpu-0-part-3g-40gb-4");
    attr_s(&mig, "gpu.gpusched.io/type", "mig");
    attr_s(&mig, "gpu.gpusched.io/profile", "3g.40gb");
    attr_s(&mig, "gpu.gpusched.io/parentUUID", "GPU-1111");
    attr_i(&mig, "gpu.gpusched.io/placementStart", 4);
    attr_b(&mig, "gpu.gpusched.io/dynamic", true);
    cap_q(&mig, "gpu.gpusched.io/memory", "40Gi");
}

static int run(const char *expr, const struct gs_dra_device *d)
{
    static struct gs_cel p;
    struct gs_error err;
    gs_error_init(&err);
    int rc = gs_cel_compile(expr, strlen(expr), &p, &err);
    cr_assert_eq(rc, 0, "compile '%s': %s", expr, err.msg);
    return gs_cel_eval(&p, d);
}

Test(cel, selects_by_driver_attributes_and_capacity, .init = setup)
{
    const struct {
        const char *expr;
        int gpu, mig;
    } cases[] = {
        {"device.driver == 'gpu.gpusched.io' && device.attributes['gpu.gpusched.io'].type == "
         "'gpu'",
         1, 0},
        {"device.attributes[\"gpu.gpusched.io\"].type == \"mig\"", 0, 1},
        {"device.attributes['gpu.gpusched.io']['profile'] == '3g.40gb'", 0, 1},
        {"device.capacity['gpu.gpusched.io'].memory.compareTo(quantity('40Gi')) >= 0", 1, 1},
        {"device.capacity['gpu.gpusched.io'].memory.compareTo(quantity('41Gi')) >= 0", 1, 0},
        {"device.capacity['gpu.gpusched.io'].memory.isGreaterThan(quantity('40Gi'))", 1, 0},
        {"device.capacity['gpu.gpusched.io'].memory.isLessThan(quantity('80Gi'))", 0, 1},
        {"device.attributes['gpu.gpusched.io'].profile in ['1g.10gb', '3g.40gb']", 0, 1},
        {"device.attributes['gpu.gpusched.io'].productName in ['A100-80GB', 'H100-80GB']", 1, 0},
        {"device.attributes['gpu.gpusched.io'].index < 1 && device.attributes['gpu.gpusched.io']"
         ".index >= 0",
         1, 0},
        {"device.attributes['gpu.gpusched.io'].placementStart > 3", 0, 1},
        {"device.attributes['gpu.gpusched.io'].dynamic == true", 0, 1},
        {"!(device.attributes['gpu.gpusched.io'].type == 'gpu')", 0, 1},
        {"device.attributes['gpu.gpusched.io'].type != 'gpu' || "
         "device.attributes['gpu.gpusched.io'].index == 0",
         1, 1},
        {"(device.attributes['gpu.gpusched.io'].type == 'gpu')", 1, 0},
        {"true", 1, 1},
        {"device.attributes['gpu.gpusched.io'].index == -1", 0, 0},
        {"'a' < 'b' && 2 <= 2 && 3 > 2", 1, 1},
        {"device.attributes['gpu.gpusched.io'].productName == 'A100-80GB\\'s'", 0, 0},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        cr_expect_eq(run(cases[k].expr, &gpu), cases[k].gpu, "%s on gpu: want %d", cases[k].expr,
                     cases[k].gpu);
        cr_expect_eq(run(cases[k].expr, &mig), cases[k].mig, "%s on mig: want %d", cases[k].expr,
                     cases[k].mig);
    }
}

Test(cel, errors_follow_cel_semantics, .init = setup)
{
    /* gpu has no profile: reading it errs, && and || absorb the error as CEL does */
    const char *prof = "device.attributes['gpu.gpusched.io'].profile == '3g.40gb'";
    char e[256];
    cr_expect_eq(run(prof, &gpu), 0);
    snprintf(e, sizeof(e), "!(%s)", prof);
    cr_expect_eq(run(e, &gpu), 0, "an error stays an error under !");
    snprintf(e, sizeof(e), "%s || device.attributes['gpu.gpusched.io'].type == 'gpu'", prof);
    cr_expect_eq(run(e, &gpu), 1, "error || true is true");
    snprintf(e, sizeof(e), "device.attributes['gpu.gpusched.io'].type == 'mig' && %s", prof);
    cr_expect_eq(run(e, &gpu), 0, "false && error is false");
    /* comparing an int with a string is a type error, not false */
    cr_expect_eq(run("!(device.attributes['gpu.gpusched.io'].index == '0')", &gpu), 0);
    /* other domains are other attributes */
    cr_expect_eq(run("device.attributes['gpu.nvidia.com'].type == 'gpu'", &gpu), 0);
}

Test(cel, outside_the_subset_is_unsupported_with_position)
{
    const struct {
        const char *expr, *msg;
    } cases[] = {
        {"device.attributes['gpu.gpusched.io'].exists(a, a == 'x')",
         "unsupported CEL: macro 'exists' on device.attributes['...'] at position 37"},
        {"device.attributes['gpu.gpusched.io'].productName.matches('A100.*')",
         "unsupported CEL: method 'matches' at position 49"},
        {"device.attributes.exists(d, d == 'x')",
         "unsupported CEL: method or field 'exists' on device.attributes at position 18"},
        {"size(device.attributes) > 2", "unsupported CEL: function 'size' at position 0"},
        {"device.attributes['gpu.gpusched.io'].index + 1 == 2",
         "unsupported CEL: operator '+' at position 43"},
        {"device.capacity['gpu.gpusched.io'].memory >= quantity('40Gi')",
         "unsupported CEL: operator '>=' on a quantity (use .compareTo(quantity('...'))) at "
         "position 42"},
        {"device.name == 'gpu-0'", "unsupported CEL: device field 'name' at position 7"},
        {"has(device.attributes['x'].y)", "unsupported CEL: macro 'has' at position 0"},
        {"device.attributes['gpu.gpusched.io'].index == 1.5",
         "unsupported CEL: floating-point literal at position 46"},
        {"device.attributes['gpu.gpusched.io'].type == 'gpu' ? true : false",
         "unsupported CEL: operator '?' at position 51"},
        {"x == 1", "unsupported CEL: identifier 'x' at position 0"},
        {"device.attributes['d'].a in device.attributes['d'].b",
         "unsupported CEL: 'in' other than with a list literal"},
        {"device.attributes['d'].a == 'x\\n'", "unsupported CEL: escape sequence"},
        {"r'abc' == 'abc'", "unsupported CEL: prefixed (raw or bytes) string at position 0"},
        {"1 == 1u", "unsupported CEL: unsigned literal at position 5"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        static struct gs_cel p;
        struct gs_error err;
        gs_error_init(&err);
        cr_expect_eq(gs_cel_compile(cases[k].expr, strlen(cases[k].expr), &p, &err), GS_EINVAL,
                     "%s compiled", cases[k].expr);
        cr_expect(strstr(err.msg, cases[k].msg) != NULL, "%s: got '%s', want '%s'", cases[k].expr,
                  err.msg, cases[k].msg);
    }
}

Test(cel, malformed_input_is_a_syntax_error)
{
    const struct {
        const char *expr, *msg;
    } cases[] = {
        {"", "unexpected end of expression"},
        {"device.attributes['d'].a == ", "unexpected end of expression"},
        {"(device.driver == 'x'", "expected ')'"},
        {"device.driver == 'x", "unterminated string"},
        {"device.driver", "must be a boolean"},
        {"1 == 1 == 1", "chained comparison"},
        {"device.driver == 'x' 'y'", "unexpected token after the expression"},
        {"99999999999999999999 == 1", "integer literal out of range"},
        {"quantity('12xyz').compareTo(quantity('1')) == 0", "invalid quantity"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        static struct gs_cel p;
        struct gs_error err;
        gs_error_init(&err);
        cr_expect_eq(gs_cel_compile(cases[k].expr, strlen(cases[k].expr), &p, &err), GS_EINVAL,
                     "%s compiled", cases[k].expr);
        cr_expect(strstr(err.msg, cases[k].msg) != NULL, "%s: got '%s', want '%s'", cases[k].expr,
                  err.msg, cases[k].msg);
    }
}

Test(cel, bounds_hold)
{
    static struct gs_cel p;
    static char big[GS_CEL_MAX_LEN + 100];
    struct gs_error err;
    /* nesting */
    size_t n = 0;
    for (int k = 0; k < 200; k++)
        big[n++] = '(';
    n += (size_t)snprintf(big + n, sizeof(big) - n, "true");
    for (int k = 0; k < 200; k++)
        big[n++] = ')';
    gs_error_init(&err);
    cr_expect_eq(gs_cel_compile(big, n, &p, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "nested too deeply") != NULL, "%s", err.msg);
    /* too many terms */
    n = 0;
    for (int k = 0; k < 300 && n + 20 < GS_CEL_MAX_LEN; k++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "%strue", k ? " && " : "");
    gs_error_init(&err);
    cr_expect_eq(gs_cel_compile(big, n, &p, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "too many terms") != NULL, "%s", err.msg);
    /* too long */
    memset(big, ' ', sizeof(big));
    gs_error_init(&err);
    cr_expect_eq(gs_cel_compile(big, GS_CEL_MAX_LEN + 1, &p, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "longer than") != NULL, "%s", err.msg);
}
