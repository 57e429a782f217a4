/* The outer optimizer and the mixing step, written to round exactly as
 * PyTorch's CPU kernels do, so results match torch bit for bit. */
#include "algo/algo_int.h"

#include <math.h>

/* torch.optim.SGD's single-tensor path with nesterov=True, dampening 0:
 *   buf.mul_(momentum).add_(grad)        two roundings
 *   d = grad.add(buf, alpha=momentum)    one fused multiply-add
 *   p.add_(d, alpha=-lr)                 one fused multiply-add
 * A zero momentum buffer gives the first step torch takes with buf = grad.
 * The products and sums are separate statements so the compiler cannot
 * contract them differently. */
void ftc__algo_nesterov_step(float *p, float *buf, const float *g, size_t n,
                             float lr, float momentum)
{
    for (size_t i = 0; i < n; i++) {
        float b = buf[i] * momentum;
        b = b + g[i];
        buf[i] = b;
        float d = fmaf(b, momentum, g[i]);
        p[i] = fmaf(d, -lr, p[i]);
    }
}

/* torch.lerp: weight < 0.5 ? self + weight * (end - self)
 *                          : end - (end - self) * (1 - weight),
 * each a fused multiply-add. */
void ftc__algo_lerp(float *self, const float *end, size_t n, float weight)
{
    const float rest = 1.0f - weight;
    for (size_t i = 0; i < n; i++) {
        float diff = end[i] - self[i];
        if (weight < 0.5f) {
            self[i] = fmaf(weight, diff, self[i]);
        } else {
            self[i] = fmaf(-diff, rest, end[i]);
        }
    }
}
