/* journal.c - the scheduler daemon's ring of recent events (sched/journal.h). */
#include "journal.h"

#include "../base/clock.h"

#include <string.h>

void gs__journal_init(struct gs_journal *j)
{
    memset(j, 0, sizeof(*j));
    pthread_mutex_init(&j->mu, NULL);
}

void gs__journal_release(struct gs_journal *j)
{
    for (int k = 0; k < GS_JOURNAL_MAX; k++)
        json_decref(j->ring[k]);
    pthread_mutex_destroy(&j->mu);
    memset(j, 0, sizeof(*j));
}

void gs__journal_add(struct gs_journal *j, const char *kind, json_t *fields)
{
    if (!fields)
        return;
    double now = gs_clock_wall();
    pthread_mutex_lock(&j->mu);
    uint64_t seq = ++j->seq;
    json_object_set_new(fields, "seq", json_integer((json_int_t)seq));
    json_object_set_new(fields, "time", json_real(now));
    json_object_set_new(fields, "kind", json_string(kind));
    json_t **slot = &j->ring[(seq - 1) % GS_JOURNAL_MAX];
    json_decref(*slot);
    *slot = fields;
    pthread_mutex_unlock(&j->mu);
}

json_t *gs__journal_json(struct gs_journal *j)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    pthread_mutex_lock(&j->mu);
    uint64_t n = j->seq < GS_JOURNAL_MAX ? j->seq : GS_JOURNAL_MAX;
    for (uint64_t s = j->seq - n + 1; s <= j->seq; s++)
        if (json_array_append_new(a, json_deep_copy(j->ring[(s - 1) % GS_JOURNAL_MAX]))) {
            json_decref(a);
            a = NULL;
            break;
        }
    pthread_mutex_unlock(&j->mu);
    return a;
}
