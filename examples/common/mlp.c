/* Forward and backward passes of the example MLP. */
#include "mlp.h"

#include <math.h>
#include <string.h>

#include "rng.h"

size_t mlp_param_count(mlp_shape s)
{
    return (size_t)s.hidden * (size_t)s.inputs + (size_t)s.hidden +
           (size_t)s.classes * (size_t)s.hidden + (size_t)s.classes;
}

size_t mlp_scratch_count(mlp_shape s, int batch)
{
    /* hidden activations and class probabilities per example, plus the
     * hidden-layer error of one example */
    return (size_t)batch * ((size_t)s.hidden + (size_t)s.classes) +
           (size_t)s.hidden;
}

/* Views of the four blocks of the flat vector. */
typedef struct layers {
    float *w1, *b1, *w2, *b2;
} layers;

static layers split(mlp_shape s, float *p)
{
    layers l;
    l.w1 = p;
    l.b1 = l.w1 + (size_t)s.hidden * s.inputs;
    l.w2 = l.b1 + s.hidden;
    l.b2 = l.w2 + (size_t)s.classes * s.hidden;
    return l;
}

void mlp_init(mlp_shape s, float *params, uint64_t seed)
{
    layers l = split(s, params);
    uint64_t st = seed;
    double g1 = 1.0 / sqrt((double)s.inputs);
    double g2 = 1.0 / sqrt((double)s.hidden);
    for (size_t i = 0; i < (size_t)s.hidden * s.inputs; i++) {
        l.w1[i] = (float)(rng_normal(&st) * g1);
    }
    memset(l.b1, 0, sizeof(float) * (size_t)s.hidden);
    for (size_t i = 0; i < (size_t)s.classes * s.hidden; i++) {
        l.w2[i] = (float)(rng_normal(&st) * g2);
    }
    memset(l.b2, 0, sizeof(float) * (size_t)s.classes);
}

float mlp_loss_grad(mlp_shape s, const float *params, const float *x,
                    const int *y, int batch, float *grad, float *scratch,
                    int *correct)
{
    layers p = split(s, (float *)params);
    float *hid = scratch;                           /* batch x hidden */
    float *prob = hid + (size_t)batch * s.hidden;   /* batch x classes */
    float *dhid = prob + (size_t)batch * s.classes; /* hidden */
    double loss = 0;
    int right = 0;
    for (int n = 0; n < batch; n++) {
        const float *xn = x + (size_t)n * s.inputs;
        float *hn = hid + (size_t)n * s.hidden;
        for (int j = 0; j < s.hidden; j++) {
            float a = p.b1[j];
            const float *w = p.w1 + (size_t)j * s.inputs;
            for (int i = 0; i < s.inputs; i++) {
                a += w[i] * xn[i];
            }
            hn[j] = tanhf(a);
        }
        float *pn = prob + (size_t)n * s.classes;
        float top = -INFINITY;
        int arg = 0;
        for (int k = 0; k < s.classes; k++) {
            float a = p.b2[k];
            const float *w = p.w2 + (size_t)k * s.hidden;
            for (int j = 0; j < s.hidden; j++) {
                a += w[j] * hn[j];
            }
            pn[k] = a;
            if (a > top) {
                top = a;
                arg = k;
            }
        }
        float z = 0;
        for (int k = 0; k < s.classes; k++) {
            pn[k] = expf(pn[k] - top);
            z += pn[k];
        }
        for (int k = 0; k < s.classes; k++) {
            pn[k] /= z;
        }
        loss -= log((double)pn[y[n]] + 1e-12);
        right += arg == y[n];
    }
    if (correct != NULL) {
        *correct = right;
    }
    if (grad == NULL) {
        return (float)(loss / batch);
    }
    layers g = split(s, grad);
    memset(grad, 0, sizeof(float) * mlp_param_count(s));
    float inv = 1.0f / (float)batch;
    for (int n = 0; n < batch; n++) {
        const float *xn = x + (size_t)n * s.inputs;
        const float *hn = hid + (size_t)n * s.hidden;
        float *pn = prob + (size_t)n * s.classes;
        pn[y[n]] -= 1.0f; /* d(loss)/d(logits) = softmax - onehot */
        memset(dhid, 0, sizeof(float) * (size_t)s.hidden);
        for (int k = 0; k < s.classes; k++) {
            float d = pn[k] * inv;
            float *gw = g.w2 + (size_t)k * s.hidden;
            const float *w = p.w2 + (size_t)k * s.hidden;
            g.b2[k] += d;
            for (int j = 0; j < s.hidden; j++) {
                gw[j] += d * hn[j];
                dhid[j] += d * w[j];
            }
        }
        for (int j = 0; j < s.hidden; j++) {
            float d = dhid[j] * (1.0f - hn[j] * hn[j]);
            float *gw = g.w1 + (size_t)j * s.inputs;
            g.b1[j] += d;
            for (int i = 0; i < s.inputs; i++) {
                gw[i] += d * xn[i];
            }
        }
    }
    return (float)(loss / batch);
}
