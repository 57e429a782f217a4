/* The examples' model: gradients match finite differences, training learns
 * the synthetic task, and everything is bit-for-bit deterministic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "mlp.h"
#include "testkit.h"

static const mlp_shape shape = {.inputs = 6, .hidden = 8, .classes = 3};

static void gradient_matches_finite_differences(void **state)
{
    (void)state;
    enum { B = 5 };
    size_t np = mlp_param_count(shape);
    float *p = malloc(np * sizeof(float)), *g = malloc(np * sizeof(float));
    float *scratch = malloc(mlp_scratch_count(shape, B) * sizeof(float));
    float x[B * 6];
    int y[B];
    task t;
    assert_int_equal(task_init(&t, 6, 3, 0.5f, 7), 0);
    task_batch(&t, 0, 0, B, x, y);
    mlp_init(shape, p, 11);
    mlp_loss_grad(shape, p, x, y, B, g, scratch, NULL);
    double worst = 0;
    for (size_t i = 0; i < np; i++) {
        float keep = p[i], h = 1e-2f;
        p[i] = keep + h;
        double up = mlp_loss_grad(shape, p, x, y, B, NULL, scratch, NULL);
        p[i] = keep - h;
        double down = mlp_loss_grad(shape, p, x, y, B, NULL, scratch, NULL);
        p[i] = keep;
        double numeric = (up - down) / (2 * h);
        double err =
            fabs(numeric - g[i]) / fmax(1e-3, fabs(numeric) + fabs(g[i]));
        worst = fmax(worst, err);
    }
    assert_true(worst < 2e-2);
    task_free(&t);
    free(p);
    free(g);
    free(scratch);
}

static void sgd_learns_the_task(void **state)
{
    (void)state;
    enum { B = 32 };
    size_t np = mlp_param_count(shape);
    float *p = malloc(np * sizeof(float)), *g = malloc(np * sizeof(float));
    float *scratch = malloc(mlp_scratch_count(shape, 256) * sizeof(float));
    float *x = malloc(256 * 6 * sizeof(float));
    int y[256];
    task t;
    assert_int_equal(task_init(&t, 6, 3, 0.5f, 3), 0);
    mlp_init(shape, p, 5);
    task_batch(&t, 99, 0, 256, x, y);
    float first = mlp_loss_grad(shape, p, x, y, 256, NULL, scratch, NULL);
    for (int step = 0; step < 300; step++) {
        task_batch(&t, 0, step, B, x, y);
        mlp_loss_grad(shape, p, x, y, B, g, scratch, NULL);
        for (size_t i = 0; i < np; i++) {
            p[i] -= 0.1f * g[i];
        }
    }
    int correct = 0;
    task_batch(&t, 99, 0, 256, x, y);
    float last = mlp_loss_grad(shape, p, x, y, 256, NULL, scratch, &correct);
    assert_true(last < first / 2);
    assert_true(correct > 256 * 9 / 10);
    task_free(&t);
    free(p);
    free(g);
    free(scratch);
    free(x);
}

static void batches_and_weights_are_deterministic(void **state)
{
    (void)state;
    task a, b;
    assert_int_equal(task_init(&a, 6, 3, 0.5f, 42), 0);
    assert_int_equal(task_init(&b, 6, 3, 0.5f, 42), 0);
    float xa[8 * 6], xb[8 * 6];
    int ya[8], yb[8];
    task_batch(&a, 2, 1234, 8, xa, ya);
    task_batch(&b, 2, 1234, 8, xb, yb);
    assert_memory_equal(xa, xb, sizeof(xa));
    assert_memory_equal(ya, yb, sizeof(ya));
    /* Another shard or step draws other examples. */
    task_batch(&b, 3, 1234, 8, xb, yb);
    assert_memory_not_equal(xa, xb, sizeof(xa));
    size_t np = mlp_param_count(shape);
    float *p1 = malloc(np * sizeof(float)), *p2 = malloc(np * sizeof(float));
    mlp_init(shape, p1, 9);
    mlp_init(shape, p2, 9);
    assert_memory_equal(p1, p2, np * sizeof(float));
    free(p1);
    free(p2);
    task_free(&a);
    task_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradient_matches_finite_differences),
        cmocka_unit_test(sgd_learns_the_task),
        cmocka_unit_test(batches_and_weights_are_deterministic),
    };
    return tk_run_group(tests, NULL, NULL);
}
