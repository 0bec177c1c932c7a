/* NVIDIA ComputeDomains as a ResourceClaim names them (formats/cdomain.h): the channel config's
 * domainID read from spec.devices.config, other drivers' and kinds' configs left alone, and
 * every malformed config refused with its field path; the claim reader keeping the domain, or
 * the reason, beside an otherwise good claim. */
#include "base/error.h"
#include "formats/cdomain.h"
#include "formats/draobj.h"

#include "fixtures.h"

#include <criterion/criterion.h>
#include <string.h>

#define CHAN(params)                                                                               \
    "{\"opaque\":{\"driver\":\"compute-domain.nvidia.com\",\"parameters\":" params                 \
    "},\"requests\":[\"channel\"]}"
#define PARAMS(id)                                                                                 \
    "{\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":\"ComputeDomainChannelConfig\","     \
    "\"domainID\":" id ",\"allocationMode\":\"Single\"}"
#define UID "\"1f0c3a52-8d4e-4b6a-9e2f-3c5d7a9b1e40\""

struct cd_case {
    const char *name;
    const char *config; /* JSON; NULL: absent */
    int rc;             /* 1 a domain, 0 none, GS_EINVAL */
    const char *want;   /* the domain, or a part of the error */
};

static const struct cd_case cases[] = {
    {"no_config_names_no_domain", NULL, 0, ""},
    {"an_empty_list_names_none", "[]", 0, ""},
    {"another_drivers_config_is_not_ours",
     "[{\"opaque\":{\"driver\":\"gpu.nvidia.com\",\"parameters\":{\"kind\":\"GpuConfig\"}}}]", 0,
     ""},
    {"a_channel_config_names_its_domain", "[" CHAN(PARAMS(UID)) "]", 1,
     "1f0c3a52-8d4e-4b6a-9e2f-3c5d7a9b1e40"},
    {"the_daemon_config_is_the_drivers_own",
     "[" CHAN("{\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":"
              "\"ComputeDomainDaemonConfig\",\"domainID\":\"x\"}") "]",
     0, ""},
    {"all_mode_and_no_mode_are_read",
     "[" CHAN("{\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":"
              "\"ComputeDomainChannelConfig\",\"domainID\":\"d\"}") "]",
     1, "d"},
    {"two_configs_of_one_domain_agree", "[" CHAN(PARAMS(UID)) "," CHAN(PARAMS(UID)) "]", 1,
     "1f0c3a52-8d4e-4b6a-9e2f-3c5d7a9b1e40"},
    {"an_empty_domain_is_refused_with_its_path", "[{}," CHAN(PARAMS("\"\"")) "]", GS_EINVAL,
     "spec.devices.config[1].opaque.parameters.domainID: empty"},
    {"a_number_for_the_domain_is_refused", "[" CHAN(PARAMS("42")) "]", GS_EINVAL,
     "spec.devices.config[0].opaque.parameters.domainID: not a string"},
    {"a_missing_domain_is_refused",
     "[" CHAN("{\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":"
              "\"ComputeDomainChannelConfig\"}") "]",
     GS_EINVAL, "parameters.domainID: missing"},
    {"parameters_that_are_no_object_are_refused", "[" CHAN("\"domainID=x\"") "]", GS_EINVAL,
     "spec.devices.config[0].opaque.parameters: expected an object"},
    {"parameters_without_a_kind_are_refused", "[" CHAN("{\"domainID\":\"x\"}") "]", GS_EINVAL,
     "parameters.kind: missing"},
    {"another_api_group_is_refused",
     "[" CHAN("{\"apiVersion\":\"example.com/v1\",\"kind\":\"ComputeDomainChannelConfig\","
              "\"domainID\":\"x\"}") "]",
     GS_EINVAL,
     "parameters.apiVersion: expected resource.nvidia.com/<version>, got 'example.com/v1'"},
    {"an_unknown_allocation_mode_is_refused",
     "[" CHAN("{\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":"
              "\"ComputeDomainChannelConfig\",\"domainID\":\"x\",\"allocationMode\":\"Some\"}") "]",
     GS_EINVAL, "parameters.allocationMode: expected Single or All"},
    {"two_domains_in_one_claim_are_refused",
     "[" CHAN(PARAMS(UID)) "," CHAN(PARAMS("\"other\"")) "]", GS_EINVAL,
     "config[1].opaque.parameters.domainID: 'other', but an earlier config names"},
    {"a_domain_over_the_bound_is_refused",
     "[" CHAN(PARAMS("\"0123456789012345678901234567890123456789012345678901234567890123\"")) "]",
     GS_EINVAL, "domainID: longer than 63 characters"},
    {"a_config_that_is_no_list_is_refused", "{}", GS_EINVAL,
     "spec.devices.config: expected a list"},
};

Test(cdomain, each_config_reads_as_its_case_says)
{
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const struct cd_case *c = &cases[k];
        json_t *o = c->config ? json_of(c->config) : NULL;
        cr_assert(!c->config || o, "%s: bad fixture", c->name);
        struct gs_error err;
        gs_error_init(&err);
        char id[GS_CDOMAIN_ID_MAX];
        int rc = gs_cdomain_read(o, id, sizeof(id), &err);
        cr_assert_eq(rc, c->rc, "%s: rc %d, want %d (%s)", c->name, rc, c->rc, err.msg);
        if (rc >= 0)
            cr_assert_str_eq(id, c->want, "%s: id '%s', want '%s'", c->name, id, c->want);
        else
            cr_assert(strstr(err.msg, c->want) && !id[0], "%s: '%s' lacks '%s'", c->name, err.msg,
                      c->want);
        json_decref(o);
    }
}

#define CLAIM(config)                                                                              \
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"train-0-channel\",\"uid\":\"u1\"},"            \
    "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"channel\",\"exactly\":{\"deviceClassName\":" \
    "\"compute-domain-default-channel.nvidia.com\"}}],\"config\":" config "}}}"

Test(cdomain, a_claim_keeps_its_domain)
{
    json_t *o = json_of(CLAIM("[" CHAN(PARAMS(UID)) "]"));
    static struct gs_draobj_claim c;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_claim_read(o, &c, &err), 0, "%s", err.msg);
    cr_assert_str_eq(c.cd_domain, "1f0c3a52-8d4e-4b6a-9e2f-3c5d7a9b1e40");
    cr_assert_str_eq(c.cd_why, "");
    gs_draobj_claim_release(&c);
    json_decref(o);
}

Test(cdomain, a_claim_with_a_bad_config_is_read_with_the_reason)
{
    json_t *o = json_of(CLAIM("[" CHAN(PARAMS("\"\"")) "]"));
    static struct gs_draobj_claim c;
    struct gs_error err;
    gs_error_init(&err);
    cr_assert_eq(gs_draobj_claim_read(o, &c, &err), 0, "%s", err.msg);
    cr_assert_eq(c.nreq, 1, "%d", c.nreq);
    cr_assert_str_eq(c.cd_domain, "");
    cr_assert(strstr(c.cd_why, "resourceclaim ml/train-0-channel: "
                               "spec.devices.config[0].opaque.parameters.domainID: empty"),
              "%s", c.cd_why);
    gs_draobj_claim_release(&c);
    json_decref(o);
}
