/* The verdict of `ftc demo`, from the two `ftc run` summaries (their JSON
 * is documented in docs/operations.md). */
#include "demo_report.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static json_int_t int_of(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static const char *str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : "-";
}

/* The final loss and checksum of the first replica group that finished;
 * NAN and "-" when none did. */
static double final_of(const json_t *summary, const char **checksum)
{
    const json_t *groups = json_object_get(summary, "replica_groups");
    size_t i;
    const json_t *g;
    json_array_foreach(groups, i, g)
    {
        if (strcmp(str_of(g, "status"), "finished") == 0 &&
            json_is_number(json_object_get(g, "final_loss"))) {
            *checksum = str_of(g, "checksum");
            return json_number_value(json_object_get(g, "final_loss"));
        }
    }
    *checksum = "-";
    return NAN;
}

static void print_ms(const json_t *v)
{
    if (json_is_integer(v)) {
        printf("%9lld ms", (long long)json_integer_value(v));
    } else {
        printf("%12s", "-");
    }
}

static void print_failures(const json_t *faulted)
{
    const json_t *failures = json_object_get(faulted, "failures");
    if (json_array_size(failures) == 0) {
        return;
    }
    printf("     #        at  kind  victim        step   survivors went on"
           "   victim back\n");
    size_t i;
    const json_t *f;
    json_array_foreach(failures, i, f)
    {
        printf("  %4zu  %6.1f s  %-4s  %-12s %5lld  ", i + 1,
               (double)int_of(f, "at_ms") / 1000.0, str_of(f, "kind"),
               str_of(f, "replica_id"), (long long)int_of(f, "step"));
        print_ms(json_object_get(f, "survivors_recovery_ms"));
        printf("     ");
        print_ms(json_object_get(f, "victim_recovery_ms"));
        printf("\n");
    }
    const json_t *rec = json_object_get(faulted, "recovery");
    printf("  recovery             survivors went on after %lld ms on average "
           "(max %lld ms);\n"
           "                       a killed group was back, healed, after %lld "
           "ms on average (max %lld ms)\n",
           (long long)int_of(rec, "survivors_mean_ms"),
           (long long)int_of(rec, "survivors_max_ms"),
           (long long)int_of(rec, "victim_mean_ms"),
           (long long)int_of(rec, "victim_max_ms"));
}

static int write_json(const demo_report_in *in, json_t *reference,
                      json_t *faulted, double delta, int pass)
{
    json_t *root = json_pack(
        "{s:s, s:I, s:f, s:O, s:O, s:o, s:b}", "demo", in->title, "steps",
        (json_int_t)in->steps, "tolerance", in->tolerance, "reference",
        reference, "faulted", faulted, "final_loss_delta",
        isfinite(delta) ? json_real(delta) : json_null(), "pass", pass);
    int rc =
        root == NULL ? -1 : json_dump_file(root, in->out_json, JSON_INDENT(2));
    json_decref(root);
    if (rc != 0) {
        fprintf(stderr, "ftc demo: cannot write %s\n", in->out_json);
    }
    return rc;
}

int demo_report(const demo_report_in *in)
{
    json_error_t err;
    json_t *reference = json_load_file(in->reference_json, 0, &err);
    json_t *faulted = json_load_file(in->faulted_json, 0, &err);
    if (reference == NULL || faulted == NULL) {
        fprintf(stderr, "ftc demo: a job left no summary (%s)\n", err.text);
        json_decref(reference);
        json_decref(faulted);
        return 1;
    }
    const char *ref_sum, *sum;
    double ref_loss = final_of(reference, &ref_sum);
    double loss = final_of(faulted, &sum);
    double delta = (loss - ref_loss) / ref_loss;
    long long steps = (long long)int_of(faulted, "steps_committed");
    json_int_t finished = int_of(faulted, "groups_finished");
    int identical =
        json_is_true(json_object_get(faulted, "checksums_identical"));
    int completed = int_of(faulted, "exit_code") == 0 && steps >= in->steps;
    int close = isfinite(delta) && fabs(delta) <= in->tolerance;

    printf("\nftc demo: %s, %lld replica groups x %lld ranks\n", in->title,
           (long long)int_of(faulted, "replicas"),
           (long long)int_of(faulted, "ranks"));
    printf("  steps committed      %lld of %ld in %.1f s (the fault-free "
           "reference took %.1f s, unpaced)\n",
           steps, in->steps, (double)int_of(faulted, "duration_ms") / 1000.0,
           (double)int_of(reference, "duration_ms") / 1000.0);
    json_int_t injected = int_of(faulted, "failures_injected");
    json_int_t total = int_of(faulted, "failures_total");
    printf("  failures             %lld injected, %lld on their own; the job "
           "%s\n",
           (long long)injected, (long long)(total - injected),
           completed ? "survived them all" : "did NOT complete");
    print_failures(faulted);
    printf("  final loss           %.4f on held-out data; a fault-free run of "
           "the same steps: %.4f (%+.2f%%, tolerance %.0f%%)\n",
           loss, ref_loss, 100.0 * delta, 100.0 * in->tolerance);
    printf("  replicas             %lld of %lld finished; parameters %s (%s)\n",
           (long long)finished, (long long)int_of(faulted, "replicas"),
           identical ? "bit-identical on every rank" : "NOT identical", sum);
    int pass = completed && identical && close;
    printf("  result               %s\n",
           pass         ? "PASS"
           : !completed ? "FAIL: the job did not commit every step"
           : !identical ? "FAIL: replicas ended with different parameters"
                        : "FAIL: final loss out of tolerance");
    if (in->out_json != NULL &&
        write_json(in, reference, faulted, delta, pass) != 0) {
        pass = 0;
    }
    json_decref(reference);
    json_decref(faulted);
    return pass ? 0 : 1;
}
