/* CEL device selectors (formats/cel.h): what selects which device, with the libraries
 * Kubernetes gives DRA selectors (strings, regular expressions, semver, quantity, the list
 * macros), CEL's error semantics, the refusals at compile time (syntax, types, unsupported,
 * cost) with their reasons and positions, the bounds, and evaluation from many threads. The
 * agreement with upstream case by case is e2e test_cel_conformance's. */
#include "base/error.h"
#include "formats/cel.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static struct gs_dra_attr *attr(struct gs_dra_device *d, const char *name, int type)
{
    struct gs_dra_attr *a = &d->attrs[d->nattrs++];
    memset(a, 0, sizeof(*a));
    snprintf(a->name, sizeof(a->name), "%s", name);
    a->v.type = (uint8_t)type;
    return a;
}

static void attr_s(struct gs_dra_device *d, const char *name, const char *v)
{
    snprintf(attr(d, name, GS_DRA_STRING)->v.s, GS_DRA_STR_MAX, "%s", v);
}

static void attr_v(struct gs_dra_device *d, const char *name, const char *v)
{
    snprintf(attr(d, name, GS_DRA_VERSION)->v.s, GS_DRA_STR_MAX, "%s", v);
}

static void attr_i(struct gs_dra_device *d, const char *name, int64_t v)
{
    attr(d, name, GS_DRA_INT)->v.i = v;
}

static void attr_b(struct gs_dra_device *d, const char *name, bool v)
{
    attr(d, name, GS_DRA_BOOL)->v.b = v;
}

static void cap_q(struct gs_dra_device *d, const char *name, const char *q)
{
    struct gs_dra_attr *a = attr(d, name, GS_DRA_QUANTITY);
    a->capacity = true;
    cr_assert_eq(gs_quantity_parse(q, strlen(q), &a->v.q, NULL), 0);
}

/* gpu-0 of an A100-80GB and its 3g.40gb placement at 4 (gpu.gpusched.io); an A100 and a MIG
 * device as NVIDIA's DRA driver publishes them (gpu.nvidia.com) */
static struct gs_dra_device gpu, mig, nv, nvmig;

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

    memset(&nv, 0, sizeof(nv));
    snprintf(nv.driver, sizeof(nv.driver), "gpu.nvidia.com");
    snprintf(nv.name, sizeof(nv.name), "gpu-0");
    attr_s(&nv, "gpu.nvidia.com/type", "gpu");
    attr_s(&nv, "gpu.nvidia.com/productName", "NVIDIA A100-SXM4-80GB");
    attr_s(&nv, "gpu.nvidia.com/architecture", "Ampere");
    attr_v(&nv, "gpu.nvidia.com/cudaComputeCapability", "8.0.0");
    attr_v(&nv, "gpu.nvidia.com/driverVersion", "550.54.15");
    attr_v(&nv, "gpu.nvidia.com/cudaDriverVersion", "12.4.0");
    attr_s(&nv, "resource.kubernetes.io/pcieRoot", "pci0000:00");
    cap_q(&nv, "gpu.nvidia.com/memory", "80Gi");
    nvmig = nv;
    nvmig.nattrs = 0;
    attr_s(&nvmig, "gpu.nvidia.com/type", "mig");
    attr_s(&nvmig, "gpu.nvidia.com/profile", "1g.10gb");
    attr_v(&nvmig, "gpu.nvidia.com/driverVersion", "535.104.5");
    cap_q(&nvmig, "gpu.nvidia.com/memory", "9856Mi");
    cap_q(&nvmig, "gpu.nvidia.com/memorySlice3", "1");
}

static struct gs_cel prog;

/* 1 or 0 as the selector selects d, -1 when it errs on d; the expression must compile */
static int run(const char *expr, const struct gs_dra_device *d)
{
    struct gs_error err;
    gs_error_init(&err);
    int rc = gs_cel_compile(expr, strlen(expr), &prog, &err);
    cr_assert_eq(rc, 0, "compile '%s': %s", expr, err.msg);
    rc = gs_cel_run(&prog, d, &err);
    cr_assert(rc == 0 || rc == 1 || err.msg[0], "%s: an error without a message", expr);
    cr_assert_eq(gs_cel_eval(&prog, d), rc == 1, "%s: eval and run disagree", expr);
    return rc < 0 ? -1 : rc;
}

struct want {
    const char *expr;
    int a, b; /* on the first and the second device: 1 selects, 0 not, -1 errs */
};

static void expect_all(const struct want *w, size_t n, const struct gs_dra_device *a,
                       const struct gs_dra_device *b)
{
    for (size_t k = 0; k < n; k++) {
        int x = run(w[k].expr, a), y = run(w[k].expr, b);
        cr_expect_eq(x, w[k].a, "%s on %s: got %d, want %d", w[k].expr, a->name, x, w[k].a);
        cr_expect_eq(y, w[k].b, "%s on %s: got %d, want %d", w[k].expr, b->name, y, w[k].b);
    }
}

#define EXPECT_ALL(cases, a, b) expect_all(cases, sizeof(cases) / sizeof(cases[0]), a, b)

Test(cel, selects_by_driver_attributes_and_capacity, .init = setup)
{
    static const struct want cases[] = {
        {"device.driver == 'gpu.gpusched.io' && device.attributes['gpu.gpusched.io'].type == "
         "'gpu'",
         1, 0},
        {"device.attributes[\"gpu.gpusched.io\"].type == \"mig\"", 0, 1},
        {"device.attributes['gpu.gpusched.io']['profile'] == '3g.40gb'", -1, 1},
        {"device.capacity['gpu.gpusched.io'].memory.compareTo(quantity('40Gi')) >= 0", 1, 1},
        {"device.capacity['gpu.gpusched.io'].memory.compareTo(quantity('41Gi')) >= 0", 1, 0},
        {"device.capacity['gpu.gpusched.io'].memory.isGreaterThan(quantity('40Gi'))", 1, 0},
        {"device.capacity['gpu.gpusched.io'].memory.isLessThan(quantity('80Gi'))", 0, 1},
        {"device.attributes['gpu.gpusched.io'].profile in ['1g.10gb', '3g.40gb']", -1, 1},
        {"device.attributes['gpu.gpusched.io'].productName in ['A100-80GB', 'H100-80GB']", 1, -1},
        {"device.attributes['gpu.gpusched.io'].placementStart > 3", -1, 1},
        {"device.attributes['gpu.gpusched.io'].dynamic", -1, 1},
        {"!(device.attributes['gpu.gpusched.io'].type == 'gpu')", 0, 1},
        {"true", 1, 1},
        {"device.attributes['gpu.gpusched.io'].index == -1", 0, -1},
        {"'a' < 'b' && 2 <= 2 && 3 > 2", 1, 1},
        {"device.attributes.gpu.size() == 0", 1, 1},
        {"device.allowMultipleAllocations", 0, 0},
    };
    EXPECT_ALL(cases, &gpu, &mig);
}

/* the claims written for NVIDIA's own driver that the old subset refused */
Test(cel, nvidia_claims_with_versions_and_names, .init = setup)
{
    static const struct want cases[] = {
        {"device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A100')", 1, -1},
        {"device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))", 1,
         0},
        {"device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('535.104.5')) == 0", 0,
         1},
        {"device.attributes['gpu.nvidia.com'].cudaComputeCapability.major() >= 8", 1, -1},
        {"device.attributes['gpu.nvidia.com'].cudaDriverVersion == semver('v12.4', true)", 1, -1},
        {"has(device.attributes['gpu.nvidia.com'].cudaComputeCapability) && "
         "device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('7.5.0'))",
         1, 0},
        {"device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:00'", 1, -1},
        {"device.capacity['gpu.nvidia.com'].exists(c, c.startsWith('memorySlice'))", 0, 1},
        {"device.capacity['gpu.nvidia.com'].memory.asInteger() > 20000000000", 1, 0},
        {"cel.bind(a, device.attributes['gpu.nvidia.com'], a.type == 'mig' && a.profile in "
         "['1g.10gb', '2g.20gb'])",
         0, 1},
        {"device.attributes['gpu.nvidia.com'].productName.matches('^NVIDIA (A100|H100)')", 1, -1},
        {"'gpu.nvidia.com' in device.attributes && size(device.attributes['gpu.nvidia.com']) > 5",
         1, 0},
    };
    EXPECT_ALL(cases, &nv, &nvmig);
}

Test(cel, errors_follow_cel_semantics, .init = setup)
{
    static const struct want cases[] = {
        /* a missing attribute errs; && and || absorb an error both ways */
        {"device.attributes['gpu.gpusched.io'].profile == '3g.40gb'", -1, 1},
        {"!(device.attributes['gpu.gpusched.io'].profile == '3g.40gb')", -1, 0},
        {"device.attributes['gpu.gpusched.io'].profile == 'x' || true", 1, 1},
        {"true || device.attributes['gpu.gpusched.io'].profile == 'x'", 1, 1},
        {"false && device.attributes['gpu.gpusched.io'].profile == 'x'", 0, 0},
        {"device.attributes['gpu.gpusched.io'].profile == 'x' && false", 0, 0},
        /* heterogeneous equality: false, not an error; ordering across types errs */
        {"device.attributes['gpu.gpusched.io'].type == 1", 0, 0},
        {"device.attributes['gpu.gpusched.io'].type < 1", -1, -1},
        /* overflow, division by zero; an attribute's value that is not a bool cannot select */
        {"9223372036854775807 + device.attributes['gpu.gpusched.io'].index + 1 > 0", -1, -1},
        {"1 / device.attributes['gpu.gpusched.io'].index == 0", -1, -1},
        {"device.attributes['gpu.gpusched.io'].type", -1, -1},
        {"has(device.attributes['gpu.gpusched.io'].profile)", 0, 1},
        {"has(device.attributes['x'].y)", 0, 0},
        {"[0, 1].all(i, 1 / i > 0)", -1, -1},
        {"[0, 1].exists(i, 1 / i > 0)", 1, 1},
    };
    EXPECT_ALL(cases, &gpu, &mig);
}

Test(cel, libraries, .init = setup)
{
    static const struct want cases[] = {
        {"'Hello'.lowerAscii() == 'hello' && 'a'.upperAscii() == 'A'", 1, 1},
        {"'héllo'.size() == 5 && 'héllo'.charAt(1) == 'é' && 'héllo'.indexOf('l') == 2", 1, 1},
        {"'hello'.lastIndexOf('l') == 3 && 'a,b,c'.split(',') == ['a', 'b', 'c']", 1, 1},
        {"' x '.trim() == 'x' && 'abc'.substring(1, 2) == 'b' && 'aXa'.replace('a', 'b') == 'bXb'",
         1, 1},
        {"dyn(['a', 'b']).join('-') == 'a-b' && 'abc'.contains('b') && 'abc'.endsWith('c')", 1, 1},
        {"'abc'.substring(4) == ''", -1, -1},
        {"'a1b2'.matches('^([a-z][0-9])+$') && !'ab'.matches('\\\\d')", 1, 1},
        {"'ABC'.matches('(?i)abc') && 'a\\nb'.matches('(?m)^b$')", 1, 1},
        {"int('42') == 42 && uint(7) == 7u && double('1.5') == 1.5 && string(1.5) == '1.5'", 1, 1},
        {"string(1234567.0) == '1.234567e+06' && bool('true')", 1, 1},
        {"int(device.attributes['gpu.gpusched.io'].type) == 1", -1, -1},
        {"[1, 2, 3].map(i, i * 2) == [2, 4, 6] && [1, 2, 3].filter(i, i > 1).size() == 2", 1, 1},
        {"[1, 2, 3].exists_one(i, i > 2) && {'a': 1}.all(k, k == 'a')", 1, 1},
        {"cel.bind(x, 'a', x + x == 'aa') && 1 in [1, 2] && 'a' in {'a': 1}", 1, 1},
        {"semver('1.2.3-rc.1').isLessThan(semver('1.2.3')) && isSemver('1.2', true)", 1, 1},
        {"!isSemver('1.2') && semver('1.10.0').compareTo(semver('1.9.0')) == 1", 1, 1},
        {"semver('1.2') == semver('1.2.0')", -1, -1},
        {"quantity('1.5').isInteger() || quantity('1000m').isInteger()", 0, 0},
        {"quantity('1Gi').add(1).asInteger() == 1073741825 && sign(quantity('-1')) == -1", 1, 1},
        {"quantity('1k').asApproximateFloat() == 1000.0 && isQuantity('1Gi') && "
         "!isQuantity('1x')",
         1, 1},
        {"quantity('1x') == quantity('1')", -1, -1},
        {"1 < 1.5 && 2u > 1 && dyn(1) == 1.0 && null == null", 1, 1},
        {"[1, 2, 3].sum() == 6 && [3, 1].min() == 1 && [2, 1].max() == 2 && "
         "[1, 2].isSorted() && [1, 2, 1].lastIndexOf(1) == 2 && [1, 2].indexOf(2) == 1",
         1, 1},
        {"[].min() == 1", -1, -1},
    };
    EXPECT_ALL(cases, &gpu, &mig);
}

static void expect_refused(const char *expr, int refusal, const char *msg)
{
    struct gs_error err;
    gs_error_init(&err);
    cr_expect_eq(gs_cel_compile(expr, strlen(expr), &prog, &err), GS_EINVAL, "%s compiled", expr);
    cr_expect_eq(prog.refusal, refusal, "%s: refusal %d, want %d (%s)", expr, prog.refusal, refusal,
                 err.msg);
    cr_expect(strstr(err.msg, msg) != NULL, "%s: got '%s', want '%s'", expr, err.msg, msg);
    cr_expect_eq(gs_cel_eval(&prog, &gpu), 0, "%s: a refused program selects nothing", expr);
}

Test(cel, malformed_input_is_a_syntax_error, .init = setup)
{
    static const struct {
        const char *expr, *msg;
    } cases[] = {
        {"", "unexpected end of expression at position 0"},
        {"device.attributes['d'].a == ", "unexpected end of expression"},
        {"(device.driver == 'x'", "expected ')'"},
        {"device.driver == 'x", "unterminated string at position 17"},
        {"device.driver == 'x' 'y'", "unexpected ''y'' after the expression at position 21"},
        {"99999999999999999999 == 1", "integer literal out of range"},
        {"9223372036854775808 > 0", "integer literal out of range"},
        {"'\\q' == 'q'", "invalid escape sequence"},
        {"has(device)", "invalid argument to has() macro"},
        {"[1].all(1, true)", "argument must be a simple name"},
        {"while == 1", "reserved word 'while'"},
        {"1 +", "unexpected end of expression"},
        {"'a\nb' == 'ab'", "newline in a string"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        expect_refused(cases[k].expr, GS_CEL_SYNTAX, cases[k].msg);
}

Test(cel, type_errors_are_compile_errors, .init = setup)
{
    static const struct {
        const char *expr, *msg;
    } cases[] = {
        {"device.driver", "must evaluate to bool or the unknown type, not string"},
        {"1 + 'a' == 2", "found no matching overload for '_+_' applied to '(int, string)' at "
                         "position 2"},
        {"1 == 1.0", "found no matching overload for '_==_' applied to '(int, double)'"},
        {"[1, 'a'].size() == 2", "expected type 'int' but found 'string' at position 4"},
        {"device.name == 'x'", "undefined field 'name' at position 7"},
        {"x == 1", "undeclared reference to 'x' at position 0"},
        {"'a'.nope()", "undeclared reference to 'nope'"},
        {"'a'.startsWith(1)",
         "found no matching overload for 'startsWith' applied to 'string.(int)'"},
        {"device.capacity['d'].m > quantity('1')",
         "found no matching overload for '_>_' applied to '(kubernetes.Quantity, "
         "kubernetes.Quantity)'"},
        {"semver('1.0.0') < semver('2.0.0')", "found no matching overload for '_<_'"},
        {"device.attributes['d'].a.all(i, true)",
         "expression of type 'any' cannot be range of a comprehension"},
        {"1 && true", "expected type 'bool' but found 'int'"},
        {"int('x') == 1", "type conversion error from 'string' to 'int'"},
        {"uint(-1) == 1u", "unsigned integer overflow"},
        {"'a'.matches('[')", "invalid matches argument: missing closing ]"},
        {"'a'.matches('a**')", "invalid nested repetition operator"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        expect_refused(cases[k].expr, GS_CEL_INVALID, cases[k].msg);
}

Test(cel, outside_gpusched_is_unsupported_with_position, .init = setup)
{
    static const struct {
        const char *expr, *msg;
    } cases[] = {
        {"device.attributes['d'].a.find('x') == 'x'", "unsupported CEL: function 'find' at "
                                                      "position 25"},
        {"b'abc' == b'abc'", "unsupported CEL: bytes literal at position 0"},
        {"type(1) == int", "unsupported CEL: function 'type' at position 0"},
        {"duration('1s') > duration('0s')", "unsupported CEL: function 'duration'"},
        {"{'a': 1}.all(k, v, v > 0)", "unsupported CEL: two-variable comprehension 'all'"},
        {"[2, 1].sort() == [1, 2]", "unsupported CEL: function 'sort'"},
        {"sets.contains([1], [1])", "unsupported CEL: function 'sets.contains'"},
        {"{'a': 1}.?a.orValue(0) == 1", "unsupported CEL: optional field selection"},
        {"'x'.matches('\\\\pL')", "unsupported CEL: regular expression: Unicode classes"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        expect_refused(cases[k].expr, GS_CEL_UNSUPPORTED, cases[k].msg);
}

/* upstream's cost limit (CELSelectorExpressionMaxCost), estimated as the API server does */
Test(cel, too_costly_is_refused, .init = setup)
{
    static char big[GS_CEL_MAX_LEN];
    char list[400];
    size_t n = 0;
    n += (size_t)snprintf(list + n, sizeof(list) - n, "[");
    for (int k = 1; k <= 60; k++)
        n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%d", k > 1 ? "," : "", k);
    snprintf(list + n, sizeof(list) - n, "]");
    snprintf(big, sizeof(big), "%s.all(a, %s.all(b, %s.all(c, a + b + c > 0)))", list, list, list);
    expect_refused(big, GS_CEL_COSTLY, "CEL cost limit exceeded: estimated cost");
    /* the same over 10 elements is cheap enough, and true */
    snprintf(big, sizeof(big), "%s",
             "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, "
             "[1,2,3,4,5,6,7,8,9,10].all(c, a + b + c > 0)))");
    cr_expect_eq(run(big, &gpu), 1);
    cr_expect(prog.max_cost > 10000 && prog.max_cost < GS_CEL_MAX_COST, "%llu",
              (unsigned long long)prog.max_cost);
    /* upstream's estimate of join and of equality between strings of unknown size */
    expect_refused("['a'].join() == 'a'", GS_CEL_COSTLY, "exceeds 1000000");
    expect_refused("string(1) == string(1)", GS_CEL_COSTLY, "exceeds 1000000");
    expect_refused("device.attributes.all(d, device.attributes[d].all(k, device.attributes.all("
                   "e, device.attributes[e].all(l, k.size() + l.size() >= 0))))",
                   GS_CEL_COSTLY, "exceeds 1000000");
}

Test(cel, bounds_hold, .init = setup)
{
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
    cr_expect_eq(gs_cel_compile(big, n, &prog, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "nested more than") != NULL, "%s", err.msg);
    /* a long && chain is balanced, so it stays shallow */
    n = 0;
    for (int k = 0; k < 1000 && n + 20 < GS_CEL_MAX_LEN; k++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "%strue", k ? " && " : "");
    gs_error_init(&err);
    cr_expect_eq(gs_cel_compile(big, n, &prog, &err), 0, "%s", err.msg);
    cr_expect_eq(gs_cel_eval(&prog, &gpu), 1);
    /* too many terms */
    n = 0;
    n += (size_t)snprintf(big + n, sizeof(big) - n, "[");
    for (int k = 0; k < 3000 && n + 4 < GS_CEL_MAX_LEN; k++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "%s1", k ? "," : "");
    n += (size_t)snprintf(big + n, sizeof(big) - n, "].size() > 0");
    gs_error_init(&err);
    cr_expect_eq(gs_cel_compile(big, n, &prog, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "more than 2048 terms") != NULL, "%s", err.msg);
    /* too long, and a NUL byte */
    memset(big, ' ', sizeof(big));
    gs_error_init(&err);
    cr_expect_eq(gs_cel_compile(big, GS_CEL_MAX_LEN + 1, &prog, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "longer than") != NULL, "%s", err.msg);
    gs_error_init(&err);
    cr_expect_eq(gs_cel_compile("true\0", 5, &prog, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "NUL byte") != NULL, "%s", err.msg);
    /* a regular expression too large for the matcher */
    gs_error_init(&err);
    const char *re = "'a'.matches('(a{100}){20}')";
    cr_expect_eq(gs_cel_compile(re, strlen(re), &prog, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "unsupported CEL: regular expression: expression too large") != NULL,
              "%s", err.msg);
}

/* values beyond the evaluation's stack memory move to the heap once, with the same answer */
Test(cel, large_intermediate_values, .init = setup)
{
    static char big[4096];
    char list[400];
    size_t n = (size_t)snprintf(list, sizeof(list), "[");
    for (int k = 1; k <= 60; k++)
        n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%d", k > 1 ? "," : "", k);
    snprintf(list + n, sizeof(list) - n, "]");
    snprintf(big, sizeof(big), "%s.map(a, %s.map(b, a * b)).all(l, l.size() == 60)", list, list);
    cr_expect_eq(run(big, &gpu), 1);
}

struct worker {
    const struct gs_cel *p;
    const struct gs_dra_device *d;
    int want, bad;
};

static void *evaluate(void *arg)
{
    struct worker *w = arg;
    for (int k = 0; k < 2000; k++)
        w->bad += gs_cel_eval(w->p, w->d) != w->want;
    return NULL;
}

/* one compiled program, read by many threads at once */
Test(cel, one_program_many_threads, .init = setup)
{
    static struct gs_cel p;
    const char *expr = "device.attributes['gpu.gpusched.io'].type.matches('^(gpu|mig)$') && "
                       "['a', 'b'].map(s, s + device.driver).exists(s, s.endsWith('.io')) && "
                       "(device.attributes['gpu.gpusched.io'].type == 'gpu' || "
                       "device.capacity['gpu.gpusched.io'].memory.isLessThan(quantity('41Gi')))";
    cr_assert_eq(gs_cel_compile(expr, strlen(expr), &p, NULL), 0);
    struct worker w[4] = {{&p, &gpu, 1, 0}, {&p, &mig, 1, 0}, {&p, &gpu, 1, 0}, {&p, &mig, 1, 0}};
    pthread_t t[4];
    for (int k = 0; k < 4; k++)
        cr_assert_eq(pthread_create(&t[k], NULL, evaluate, &w[k]), 0);
    for (int k = 0; k < 4; k++) {
        pthread_join(t[k], NULL);
        cr_expect_eq(w[k].bad, 0, "thread %d: %d wrong answers", k, w[k].bad);
    }
}

/* a version attribute that is not semantic versioning fails every selector on its device */
Test(cel, invalid_version_attribute_fails_the_device, .init = setup)
{
    attr_v(&gpu, "gpu.gpusched.io/driverVersion", "1.2");
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_cel_compile("true", 4, &prog, &err), 0);
    cr_expect_eq(gs_cel_run(&prog, &gpu, &err), GS_EINVAL);
    cr_expect(strstr(err.msg, "attribute gpu.gpusched.io/driverVersion: parse semantic version") !=
                  NULL,
              "%s", err.msg);
    cr_expect_eq(gs_cel_eval(&prog, &mig), 1);
}
